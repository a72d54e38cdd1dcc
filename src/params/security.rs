//! Security bounds on the total modulus `Q*P`.
//!
//! The table is the one of Bossuat et al., "Security Guidelines for Implementing Homomorphic
//! Encryption", IACR ePrint 2024/463, Table 5.2: for each ring degree `N` and security level,
//! the largest `log2(Q*P)` for which the RLWE instance with a **ternary** secret (and error of
//! standard deviation about 3.19) keeps the level against classical attacks. The values are
//! copied into this file; nothing is read at run time.

use super::{SecretDistribution, SecurityLevel};

/// `(log2 N, [bound for 128, 192, 256 bits])`, ternary secret, classical security.
/// `None` marks a level the table gives no bound for.
const TERNARY_CLASSICAL: [(u32, [Option<u32>; 3]); 8] = [
    (10, [Some(26), None, None]),
    (11, [Some(53), Some(36), Some(27)]),
    (12, [Some(106), Some(73), Some(56)]),
    (13, [Some(214), Some(147), Some(114)]),
    (14, [Some(430), Some(297), Some(230)]),
    (15, [Some(868), Some(597), Some(462)]),
    (16, [Some(1747), Some(1199), Some(929)]),
    (17, [Some(3523), Some(2411), Some(1866)]),
];

/// The largest allowed `log2(Q*P)` for ring degree `2^log_n`, the given security level and
/// secret distribution (2024 guidelines, ePrint 2024/463, Table 5.2, classical attacks), or
/// `None` where the table has no entry (`N < 1024`, `N > 2^17`, or `N = 1024` above 128 bits).
#[must_use]
pub fn max_log_qp(log_n: u32, level: SecurityLevel, secret: SecretDistribution) -> Option<u32> {
    match secret {
        SecretDistribution::Ternary => {}
    }
    let column = match level {
        SecurityLevel::Bits128 => 0,
        SecurityLevel::Bits192 => 1,
        SecurityLevel::Bits256 => 2,
    };
    TERNARY_CLASSICAL.iter().find(|(l, _)| *l == log_n).and_then(|(_, row)| row.get(column).copied().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_entries_match_the_guidelines() {
        // Written out by N (not log N) as in the published table, to catch a shifted row.
        let want: [(u64, u32, u32); 22] = [
            (1024, 128, 26),
            (2048, 128, 53),
            (2048, 192, 36),
            (2048, 256, 27),
            (4096, 128, 106),
            (4096, 192, 73),
            (4096, 256, 56),
            (8192, 128, 214),
            (8192, 192, 147),
            (8192, 256, 114),
            (16384, 128, 430),
            (16384, 192, 297),
            (16384, 256, 230),
            (32768, 128, 868),
            (32768, 192, 597),
            (32768, 256, 462),
            (65536, 128, 1747),
            (65536, 192, 1199),
            (65536, 256, 929),
            (131072, 128, 3523),
            (131072, 192, 2411),
            (131072, 256, 1866),
        ];
        for (n, bits, bound) in want {
            let level = match bits {
                128 => SecurityLevel::Bits128,
                192 => SecurityLevel::Bits192,
                _ => SecurityLevel::Bits256,
            };
            let log_n = n.trailing_zeros();
            assert_eq!(max_log_qp(log_n, level, SecretDistribution::Ternary), Some(bound), "N = {n}, {bits} bits");
        }
        let mut present = 0;
        for log_n in 0..40 {
            for level in [SecurityLevel::Bits128, SecurityLevel::Bits192, SecurityLevel::Bits256] {
                if max_log_qp(log_n, level, SecretDistribution::Ternary).is_some() {
                    present += 1;
                }
            }
        }
        assert_eq!(present, want.len());
    }

    #[test]
    fn bounds_grow_with_n_and_shrink_with_level() {
        for log_n in 11..17 {
            for level in [SecurityLevel::Bits128, SecurityLevel::Bits192, SecurityLevel::Bits256] {
                let a = max_log_qp(log_n, level, SecretDistribution::Ternary).unwrap();
                let b = max_log_qp(log_n + 1, level, SecretDistribution::Ternary).unwrap();
                assert!(b > a);
            }
            let t = |l| max_log_qp(log_n, l, SecretDistribution::Ternary).unwrap();
            assert!(t(SecurityLevel::Bits128) > t(SecurityLevel::Bits192));
            assert!(t(SecurityLevel::Bits192) > t(SecurityLevel::Bits256));
        }
    }
}
