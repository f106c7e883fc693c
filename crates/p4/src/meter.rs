//! Two-rate three-colour meters (RFC 2698 trTCM), as bmv2 runs v1model's
//! `meter` and `direct_meter`, and the clock they read.
//!
//! # What
//! A [`Meter`] holds an optional [`MeterConfig`] (P4Runtime's: rates in
//! units per second, bursts in units; a unit is a packet or a byte, as
//! the extern was declared) and two token buckets. An unconfigured meter
//! answers [`GREEN`] to everything, as bmv2's does.
//!
//! # Basic design
//! Colour-blind trTCM: both buckets start full (peak `pburst`, committed
//! `cburst`) and fill at `pir` and `cir` up to their bursts. A packet of
//! `n` units is RED if the peak bucket holds fewer than `n`; else YELLOW
//! if the committed bucket does (the peak bucket pays `n`); else GREEN
//! (both pay). This is RFC 2698 §3 and the order bmv2 checks its rates.
//!
//! Tokens are kept exactly, as integers scaled by 10⁹ (a bucket holds
//! `units × 10⁹`; `elapsed_ns × rate_per_s` adds exactly what the rate
//! earns), so a test driving a [`Clock::manual`] gets the same colours
//! on every machine. Time never runs backwards for a meter: an earlier
//! `now` than the last one adds nothing.
//!
//! # Invariants
//! - Each bucket holds at most its burst × 10⁹; arithmetic saturates, so
//!   no configuration or time panics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The colours `execute_meter` and `direct_meter.read` write (bmv2's).
pub const GREEN: u8 = 0;
pub const YELLOW: u8 = 1;
pub const RED: u8 = 2;

const SCALE: u128 = 1_000_000_000;

/// A trTCM's rates (units per second) and bursts (units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeterConfig {
    pub cir: u64,
    pub cburst: u64,
    pub pir: u64,
    pub pburst: u64,
}

/// One meter cell: its configuration and buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meter {
    config: Option<MeterConfig>,
    /// Committed and peak tokens, × 10⁹.
    tc: u128,
    tp: u128,
    /// When the buckets were last filled (ns on the target's clock).
    last_ns: Option<u64>,
}

impl Meter {
    /// The configuration; `None`: unconfigured (always GREEN).
    pub fn config(&self) -> Option<MeterConfig> {
        self.config
    }

    /// Sets (or, with `None`, clears) the configuration; the buckets
    /// start full.
    pub fn configure(&mut self, config: Option<MeterConfig>) {
        *self = Meter::default();
        if let Some(c) = config {
            self.tc = u128::from(c.cburst) * SCALE;
            self.tp = u128::from(c.pburst) * SCALE;
        }
        self.config = config;
    }

    /// Colours `amount` units arriving at `now_ns` and takes their tokens.
    pub fn execute(&mut self, now_ns: u64, amount: u64) -> u8 {
        let Some(c) = self.config else {
            return GREEN;
        };
        let elapsed = match self.last_ns {
            Some(last) => now_ns.saturating_sub(last),
            None => 0,
        };
        self.last_ns = Some(self.last_ns.map_or(now_ns, |l| l.max(now_ns)));
        let fill = |tokens: u128, rate: u64, burst: u64| {
            let earned = u128::from(elapsed).saturating_mul(u128::from(rate));
            tokens.saturating_add(earned).min(u128::from(burst) * SCALE)
        };
        self.tp = fill(self.tp, c.pir, c.pburst);
        self.tc = fill(self.tc, c.cir, c.cburst);
        let need = u128::from(amount) * SCALE;
        if self.tp < need {
            return RED;
        }
        self.tp -= need;
        if self.tc < need {
            return YELLOW;
        }
        self.tc -= need;
        GREEN
    }
}

/// The time meters see, in nanoseconds.
#[derive(Clone, Debug, Default)]
pub enum Clock {
    /// The monotonic clock (nanoseconds since the process first asked).
    #[default]
    System,
    /// A time the holder of the cell sets (tests).
    Manual(Arc<AtomicU64>),
}

impl Clock {
    /// A clock that stands still until `cell` is changed.
    pub fn manual(cell: Arc<AtomicU64>) -> Clock {
        Clock::Manual(cell)
    }

    /// Now, in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        match self {
            Clock::System => {
                static START: OnceLock<Instant> = OnceLock::new();
                let start = START.get_or_init(Instant::now);
                u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
            }
            Clock::Manual(c) => c.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Worked by hand: cir 1000 B/s, cburst 1500 B, pir 2000 B/s, pburst
    /// 3000 B; 1000-byte packets.
    ///
    /// | t (ms) | Tp before | Tc before | colour | Tp after | Tc after |
    /// |--------|-----------|-----------|--------|----------|----------|
    /// | 0      | 3000      | 1500      | GREEN  | 2000     | 500      |
    /// | 0      | 2000      | 500       | YELLOW | 1000     | 500      |
    /// | 0      | 1000      | 500       | YELLOW | 0        | 500      |
    /// | 0      | 0         | 500       | RED    | 0        | 500      |
    /// | 250    | 500       | 750       | RED    | 500      | 750      |
    /// | 500    | 1000      | 1000      | GREEN  | 0        | 0        |
    /// | 1000   | 1000      | 500       | YELLOW | 0        | 500      |
    /// | 3000   | 3000 (cap)| 1500 (cap)| GREEN  | 2000     | 500      |
    #[test]
    fn trtcm_colour_sequence() {
        let mut m = Meter::default();
        m.configure(Some(MeterConfig { cir: 1000, cburst: 1500, pir: 2000, pburst: 3000 }));
        let seq: Vec<u8> =
            [0, 0, 0, 0, 250, 500, 1000, 3000].iter().map(|t| m.execute(t * MS, 1000)).collect();
        assert_eq!(seq, vec![GREEN, YELLOW, YELLOW, RED, RED, GREEN, YELLOW, GREEN]);
    }

    #[test]
    fn unconfigured_is_green_and_reset_refills() {
        let mut m = Meter::default();
        assert_eq!(m.execute(0, u64::MAX), GREEN);
        let c = MeterConfig { cir: 1, cburst: 1, pir: 1, pburst: 1 };
        m.configure(Some(c));
        assert_eq!(m.config(), Some(c));
        assert_eq!(m.execute(5, 1), GREEN);
        assert_eq!(m.execute(5, 1), RED);
        // Time going backwards earns nothing.
        assert_eq!(m.execute(1, 1), RED);
        m.configure(Some(c));
        assert_eq!(m.execute(1, 1), GREEN);
        m.configure(None);
        assert_eq!(m.execute(2, 1_000_000), GREEN);
        // Extreme values saturate instead of panicking.
        let big = MeterConfig { cir: u64::MAX, cburst: u64::MAX, pir: u64::MAX, pburst: u64::MAX };
        m.configure(Some(big));
        assert_eq!(m.execute(u64::MAX, u64::MAX), GREEN);
    }

    #[test]
    fn manual_clock() {
        let cell = Arc::new(AtomicU64::new(7));
        let c = Clock::manual(cell.clone());
        assert_eq!(c.now_ns(), 7);
        cell.store(9, Ordering::Relaxed);
        assert_eq!(c.now_ns(), 9);
        let s = Clock::System;
        assert!(s.now_ns() <= s.now_ns());
    }
}
