//! A plain component that reads the clocks and draws random numbers through
//! WASI 0.2 (Rust's standard library on wasm32-wasip2 imports them), which
//! CLAT gives every guest.

wit_bindgen::generate!({ path: "wit", world: "clock" });

use std::hash::{BuildHasher, Hasher};
use std::time::{Instant as Monotonic, SystemTime, UNIX_EPOCH};

struct Clock;

/// 64 random bits: the standard library seeds each `RandomState` from `wasi:random`.
fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish()
}

impl Guest for Clock {
    fn now() -> Instant {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Instant { seconds: since.as_secs(), nanoseconds: since.subsec_nanos() }
    }

    fn measure(rounds: u32) -> u64 {
        let start = Monotonic::now();
        let mut x = 0u64;
        for i in 0..rounds {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(u64::from(i)));
        }
        std::hint::black_box(x);
        start.elapsed().as_nanos() as u64
    }

    fn uuids(count: u8) -> Result<Vec<String>, String> {
        if count > 100 {
            return Err(format!("{count} is more than 100"));
        }
        Ok((0..count)
            .map(|_| {
                let (high, low) = (random_u64(), random_u64());
                let mut bytes = [0u8; 16];
                bytes[..8].copy_from_slice(&high.to_be_bytes());
                bytes[8..].copy_from_slice(&low.to_be_bytes());
                bytes[6] = (bytes[6] & 0x0f) | 0x40;
                bytes[8] = (bytes[8] & 0x3f) | 0x80;
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
            })
            .collect())
    }
}

export!(Clock);
