//! The msgpackr decoder and the index-row reader (`decode_row`, `with_side_effects`).
#![no_main]

use cas_native_core::fuzzing::check_msgpackr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_msgpackr(data));
