use super::*;

#[test]
fn plaintext_rotation_is_per_row_and_cyclic() {
    let v: Vec<u64> = (0..8).collect();
    assert_eq!(rotate(&v, 1, 4).unwrap(), vec![1, 2, 3, 0, 5, 6, 7, 4]);
    assert_eq!(rotate(&v, -1, 4).unwrap(), vec![3, 0, 1, 2, 7, 4, 5, 6]);
}

#[test]
fn baby_steps_are_about_the_square_root() {
    assert_eq!(baby_steps(268), 17);
    assert_eq!(baby_steps(1), 1);
    assert_eq!(baby_steps(16), 4);
}

#[test]
fn table_budget_counts_degree_one_ciphertexts_at_the_input_level() {
    // N = 2^17, level 83: 88,080,384 bytes a ciphertext; 7 GB hold 79 of them, less
    // 2 * 12 (degree 3014 has 12 bits) + 3 tables.
    assert_eq!(baby_steps_within(7_000_000_000, 1 << 17, 83, 3014, 3), 79 - 27);
    // Level 49: 52,428,800 bytes; 133 held, less 2 * 14 + 3.
    assert_eq!(baby_steps_within(7_000_000_000, 1 << 17, 49, 16382, 3), 133 - 31);
    // Never below one baby step, and no cap for an unbounded budget.
    assert_eq!(baby_steps_within(1, 1 << 17, 83, 3014, 3), 1);
    assert!(baby_steps_within(u64::MAX, 1 << 17, 83, 3014, 3) > 1 << 30);
}
