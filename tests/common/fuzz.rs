//! The bounded fuzz harness shared by the decoder fuzz tests (`tests/fuzz_decoders.rs` for the
//! library's wire and JSON readers, `mnist/tests/fuzz_models.rs` for the MNIST application's
//! model and IDX readers): byte and token mutations of valid seeds, every input's outcome
//! recorded, any panic a failure naming the input.
//!
//! Included with `#[path]`, so it is compiled into each test binary that uses it.

#![allow(dead_code, reason = "each including test binary uses part of the harness")]

use std::panic::{catch_unwind, AssertUnwindSafe};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::serial::{self, HEADER_LEN};
use wgfhe::Result;

pub fn iterations() -> usize {
    std::env::var("WGFHE_FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(5000)
}

pub fn base_seed() -> u64 {
    std::env::var("WGFHE_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed)
}

/// Values worth writing over a field.
pub fn interesting(rng: &mut ChaCha8Rng, primes: &[u64]) -> u64 {
    const FIXED: [u64; 14] = [0, 1, 2, 3, 7, 8, 31, 32, 255, 256, 65535, 65537, u32::MAX as u64, u64::MAX];
    match rng.random_range(0..4) {
        0 if !primes.is_empty() => {
            let q = primes[rng.random_range(0..primes.len())];
            [q - 1, q, q + 1][rng.random_range(0..3)]
        }
        1 => 1u64 << rng.random_range(0..64),
        2 => u64::MAX - rng.random_range(0..4),
        _ => FIXED[rng.random_range(0..FIXED.len())],
    }
}

/// One random structural or value mutation of `b` (`other`: a second seed to splice from).
pub fn mutate_once(rng: &mut ChaCha8Rng, b: &mut Vec<u8>, other: &[u8], primes: &[u64]) {
    let len = b.len();
    let at = if len == 0 { 0 } else { rng.random_range(0..len) };
    match rng.random_range(0..10) {
        0 | 1 if len > 0 => b[at] ^= 1 << rng.random_range(0..8),
        2 if len > 0 => b[at] = rng.random(),
        3 | 4 => {
            let width = [1usize, 2, 4, 8][rng.random_range(0..4)];
            let v = interesting(rng, primes).to_le_bytes();
            for (i, x) in v.iter().take(width).enumerate() {
                if let Some(slot) = b.get_mut(at + i) {
                    *slot = *x;
                }
            }
        }
        5 => b.truncate(at),
        6 => {
            let extra = rng.random_range(1..64);
            b.extend((0..extra).map(|_| rng.random::<u8>()));
        }
        7 if len > 0 => {
            let end = (at + rng.random_range(1..64)).min(len);
            b.drain(at..end);
        }
        8 if len > 0 => {
            let end = (at + rng.random_range(1..64)).min(len);
            let chunk = b[at..end].to_vec();
            b.splice(at..at, chunk);
        }
        _ => {
            if !other.is_empty() {
                let from = rng.random_range(0..other.len());
                let take = rng.random_range(1..=(other.len() - from).min(256));
                b.truncate(at);
                b.extend_from_slice(&other[from..from + take]);
            }
        }
    }
}

/// Sets the length field to the payload's length and recomputes the checksum, where the bytes
/// still have a current header.
pub fn reseal(b: &mut [u8]) {
    if b.len() >= HEADER_LEN {
        let len = (b.len() - HEADER_LEN) as u64;
        b[16..24].copy_from_slice(&len.to_le_bytes());
        let _ = serial::update_checksum(b);
    }
}

/// The next fuzz input for a binary target: mostly a mutation of one of its own `seeds`,
/// sometimes of one of `all` (every target's seeds), or random bytes.
pub fn next_input(rng: &mut ChaCha8Rng, seeds: &[Vec<u8>], all: &[Vec<u8>], primes: &[u64], wire: bool) -> Vec<u8> {
    if rng.random_range(0..16) == 0 {
        // Purely random, sometimes behind a plausible header.
        let n = rng.random_range(0..512);
        let mut b: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        if wire && b.len() >= HEADER_LEN && rng.random() {
            b[..4].copy_from_slice(&serial::MAGIC);
            b[4..6].copy_from_slice(&serial::FORMAT_VERSION.to_le_bytes());
            b[6] = rng.random_range(1..=9);
            b[7] = rng.random_range(1..=2);
            reseal(&mut b);
        }
        return b;
    }
    let pool = if rng.random_range(0..4) == 0 { all } else { seeds };
    let mut b = pool[rng.random_range(0..pool.len())].clone();
    let other = &all[rng.random_range(0..all.len())];
    for _ in 0..rng.random_range(1..=4) {
        mutate_once(rng, &mut b, other, primes);
    }
    if wire && rng.random() {
        reseal(&mut b);
    }
    b
}

/// The variant name of an error (`Checksum`, `ResidueOutOfRange`, ...).
pub fn kind(e: &wgfhe::Error) -> String {
    format!("{e:?}").split([' ', '{', '(']).next().unwrap_or("").to_owned()
}

/// What a target's inputs came to: accepted, or the typed errors by variant.
#[derive(Default)]
pub struct Outcomes {
    ok: usize,
    errors: std::collections::BTreeMap<String, usize>,
}

impl Outcomes {
    fn record<T>(&mut self, r: &Result<T>) {
        match r {
            Ok(_) => self.ok += 1,
            Err(e) => *self.errors.entry(kind(e)).or_default() += 1,
        }
    }

    fn report(&self, name: &str) {
        let n = self.ok + self.errors.values().sum::<usize>();
        eprintln!("{name}: {n} inputs, {} accepted, errors {:?}", self.ok, self.errors);
    }
}

/// Runs `check` on `iterations()` inputs made from `seeds` (and `all`); any panic fails the
/// test with the input's description.
pub fn fuzz(
    name: &str,
    seeds: &[Vec<u8>],
    all: &[Vec<u8>],
    primes: &[u64],
    wire: bool,
    check: impl Fn(&[u8]) -> Result<()>,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(base_seed() ^ name.bytes().fold(0u64, |h, c| h * 31 + u64::from(c)));
    let mut out = Outcomes::default();
    for s in seeds {
        // The seeds are valid.
        check(s).unwrap();
    }
    for i in 0..iterations() {
        let input = next_input(&mut rng, seeds, all, primes, wire);
        match catch_unwind(AssertUnwindSafe(|| check(&input))) {
            Ok(r) => out.record(&r),
            Err(_) => {
                let head: Vec<String> = input.iter().take(96).map(|x| format!("{x:02x}")).collect();
                panic!(
                    "{name}: input {i} panicked (seed {:#x}, {} bytes, starting {})",
                    base_seed(),
                    input.len(),
                    head.join("")
                );
            }
        }
    }
    out.report(name);
    // The harness must reach past the container: some inputs load or fail deeper than the
    // header and checksum checks.
    assert!(
        out.ok > 0
            || out.errors.keys().any(|k| !["Checksum", "LengthMismatch", "ObjectTypeMismatch"].contains(&k.as_str())),
        "{name}: no input got past the container"
    );
}

/// JSON mutations: bytes (through [`next_input`]) and tokens (numbers replaced by extreme ones,
/// a value dropped or repeated).
pub fn json_inputs(rng: &mut ChaCha8Rng, seeds: &[String]) -> Vec<u8> {
    const NUMBERS: [&str; 12] = [
        "0",
        "-1",
        "1",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "1e400",
        "0.5",
        "null",
    ];
    if rng.random() {
        let bytes: Vec<Vec<u8>> = seeds.iter().map(|s| s.clone().into_bytes()).collect();
        return next_input(rng, &bytes, &bytes, &[], false);
    }
    let s = &seeds[rng.random_range(0..seeds.len())];
    // Split into number runs and the rest, then edit some number runs.
    let mut tokens: Vec<String> = Vec::new();
    for c in s.chars() {
        let numeric = c.is_ascii_digit() || c == '-';
        match tokens.last_mut() {
            Some(t) if numeric && t.chars().all(|d| d.is_ascii_digit() || d == '-') => t.push(c),
            _ => tokens.push(c.to_string()),
        }
    }
    for _ in 0..rng.random_range(1..=3) {
        let i = rng.random_range(0..tokens.len());
        if tokens[i].chars().all(|d| d.is_ascii_digit() || d == '-') {
            tokens[i] = NUMBERS[rng.random_range(0..NUMBERS.len())].to_owned();
        } else if tokens[i] == "," {
            match rng.random_range(0..3) {
                0 => tokens[i].clear(),
                1 => tokens[i] = ",0,".into(),
                _ => tokens[i] = format!(",{}", "1,".repeat(rng.random_range(1..400))),
            }
        }
    }
    tokens.concat().into_bytes()
}

pub fn fuzz_json(name: &str, seeds: &[String], check: impl Fn(&str) -> Result<()>) {
    let mut rng = ChaCha8Rng::seed_from_u64(base_seed() ^ name.bytes().fold(0u64, |h, c| h * 31 + u64::from(c)));
    let mut out = Outcomes::default();
    for s in seeds {
        check(s).unwrap();
    }
    for i in 0..iterations() {
        let input = json_inputs(&mut rng, seeds);
        let text = String::from_utf8_lossy(&input);
        match catch_unwind(AssertUnwindSafe(|| check(&text))) {
            Ok(r) => out.record(&r),
            Err(_) => panic!("{name}: input {i} panicked (seed {:#x}): {text}", base_seed()),
        }
    }
    out.report(name);
    assert!(out.ok > 0 && !out.errors.is_empty(), "{name}: every input accepted or every input refused");
}
