//! The cardinality estimator of Redis 7.0 (Otmar Ertl, "New cardinality
//! estimation algorithms for HyperLogLog sketches", arXiv:1702.01284), from
//! a histogram of register values.

use super::{Histogram, Q, REGISTERS};

/// 0.5 / ln(2) (Redis writes 0.721347520444481703680, the same double).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// Ertl's sigma function.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if previous == z {
            return z;
        }
    }
}

/// Ertl's tau function.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if previous == z {
            return z / 3.0;
        }
    }
}

/// The estimated cardinality of a sketch whose registers have `histogram`.
pub fn cardinality(histogram: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histogram[Q + 1])) / m);
    for j in (1..=Q).rev() {
        z += f64::from(histogram[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_zero_registers_estimate_zero() {
        let mut histogram = [0u32; 64];
        histogram[0] = REGISTERS as u32;
        assert_eq!(cardinality(&histogram), 0);
    }

    #[test]
    fn one_register_at_one_estimates_one() {
        let mut histogram = [0u32; 64];
        histogram[0] = REGISTERS as u32 - 1;
        histogram[1] = 1;
        assert_eq!(cardinality(&histogram), 1);
    }
}
