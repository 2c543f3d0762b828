//! The gzip front end: the input as a stream (under a cap and without), then the input's first
//! 4 KiB as the data of one or two members flate2 writes (round trip, cuts, damaged trailers),
//! with the split, level and cuts taken from the input's last bytes.
#![no_main]

use cas_native_core::fuzzing::{check_gunzip, check_gzip_round_trip};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = check_gunzip(data, data.len().saturating_mul(3));
    let h = data.iter().rev().take(8).fold(data.len(), |h, &b| {
        h.wrapping_mul(131).wrapping_add(b as usize)
    });
    let plain = &data[..data.len().min(4096)];
    check_gzip_round_trip(
        plain,
        h % (plain.len() + 1),
        (h >> 12) as u32,
        &[h >> 16, h >> 32],
    );
});
