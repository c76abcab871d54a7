//! The exact McNemar test between two paired pass/fail columns.

/// Two-sided exact McNemar p-value for `b` pairs that changed one way and `c` the other way:
/// the probability, under a fair coin over the `b + c` discordant pairs, of a split at least as
/// uneven as the one seen (`min(1, 2·P[X ≤ min(b, c)])`, X ~ Binomial(b + c, ½)). No
/// discordant pair gives 1.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // Σ_{i ≤ k} C(n, i) / 2^n, in logs so that large n does not overflow.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_c = 0.0; // ln C(n, 0)
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_c + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}
