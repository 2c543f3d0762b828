//! The tar walk (`tarball::parse`, and `parse_limited` under a quarter of the input's length)
//! on the input as it is, then on the input with every block's checksum made valid, so that
//! mutated header fields reach the rules behind the checksum test.
#![no_main]

use cas_native_core::fuzzing::{check_tar, fix_tar_checksums};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limit = data.len() as u64 / 4;
    let _ = check_tar(data, limit);
    let mut fixed = data.to_vec();
    fix_tar_checksums(&mut fixed);
    let _ = check_tar(&fixed, limit);
});
