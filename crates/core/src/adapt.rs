//! # Caches that get out of the way: [`CacheMode::Auto`]
//!
//! ## What?
//! A cache pays when a hit costs less than the lookups it saves. With
//! small or compiled tables and flows that come and go (Open vSwitch's
//! worst case: short conversations), probing, missing and installing can
//! cost more than the tables alone; with more live flows than the exact
//! cache has slots, its probes mostly miss. No fixed mode is best for
//! every workload, so a worker in `Auto` mode measures: it runs each of
//! the three concrete modes ([`CacheMode::On`], [`CacheMode::Megaflow`],
//! [`CacheMode::Off`]) on a stretch of its own traffic, then keeps the one
//! that spent the fewest cycles per packet for a long stretch, and
//! measures again.
//!
//! ## Basic design
//! A [`Governor`] per worker, fed by the staged burst: before a burst it
//! says which mode to run ([`Governor::mode`]), after it the burst's
//! packets and the cycles the burst took ([`Governor::account`]). A
//! round tries the modes in turn: each gets [`WARM`] packets unmeasured
//! (a cache that was bypassed has lost its flows, and the first packets
//! refill it at the slow path's price; the very first try, whose caches
//! start empty, gets [`FIRST_WARM`]) and then [`MEASURE`] measured
//! ones. The cheapest mode is then held for [`HOLD`] packets, after which
//! the next round starts; a mode that wins again is held twice as long,
//! then four times ([`MAX_STREAK`]), so a steady workload pays for fewer
//! tries and a changed one is noticed within `4 × HOLD` packets. A burst that took more than [`PREEMPTED`]
//! cycles (the thread lost its CPU) is left out of the measurement.
//!
//! ## Cost
//! Two reads of the cycle counter per burst (per packet when packets
//! are run one at a time) and a few adds. A round
//! spends `3 × (WARM + MEASURE)` = 98 304 packets trying modes, 4.5 % of
//! a first round and 1.2 % of one held four times as long: on a workload
//! where the other two modes are twice as slow as the best, the tries
//! cost about 3 % over the best mode alone at first, under 1 % once the
//! choice is steady.
//!
//! A try measures a mode with its caches as the traffic left them. When
//! a round starts with empty caches and there are more live flows than
//! the tries' packets, a cache is measured while it is still filling and
//! may lose to `Off` where a full megaflow cache would win. The first
//! round of a worker warms its first try for [`FIRST_WARM`] packets
//! against that; a later round after the caches were emptied (a changed
//! table) does not, but the entries its tries install stay, so the round
//! after measures the caches fuller and corrects the choice.
//!
//! ## Invariants
//! - Caches change speed, never results (see [`crate::cache`]), so the
//!   mode a burst runs in never changes what happens to a packet: the
//!   clock decides only which way of computing the same answer is used.
//! - A packet run on its own ([`crate::walk::run`]) is measured as a
//!   burst of one.

use crate::walk::CacheMode;

/// Packets each mode of a round runs before it is measured. In builds
/// with debug assertions (the tests') the three lengths are a few
/// packets, so that any test running `Auto` over a handful of bursts
/// switches between all three modes, and a differential test checks the
/// switches too.
pub const WARM: u64 = if cfg!(debug_assertions) { 2 } else { 16_384 };
/// Packets the first try of a worker's first round runs unmeasured
/// instead of [`WARM`]: the caches start empty, and with more live flows
/// than a try's packets a cache measured while it fills loses to `Off`
/// (100 000 flows cycling: 3 546 cycles a packet for the filling
/// megaflow cache, 1 358 for no cache, where the full cache takes 908).
/// That try is `On`'s, whose misses fill both caches, so the `Megaflow`
/// try after it finds its cache filled too.
pub const FIRST_WARM: u64 = if cfg!(debug_assertions) { 4 } else { 1 << 18 };
/// Packets each mode of a round is measured over.
pub const MEASURE: u64 = if cfg!(debug_assertions) { 2 } else { 16_384 };
/// Packets the chosen mode runs before the next round, when it did not
/// win the round before.
pub const HOLD: u64 = if cfg!(debug_assertions) { 8 } else { 1 << 21 };
/// A mode that wins again is held `HOLD << streak` packets, the streak
/// (rounds it won in a row, less one) capped at this.
pub const MAX_STREAK: u32 = 2;
/// A burst that took more cycles than this lost its CPU on the way: left
/// out of the measurement (about 0.8 ms at 2.6 GHz; a burst of 32 packets
/// takes tens of microseconds even when every lookup misses memory).
pub const PREEMPTED: u64 = 1 << 21;

/// The modes a round tries, in order.
const TRIED: [CacheMode; 3] = [CacheMode::On, CacheMode::Megaflow, CacheMode::Off];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Trying `TRIED[i]`: packets seen, and the measured ones with their cycles.
    Try { i: usize, seen: u64, packets: u64, cycles: u64 },
    /// Running `TRIED[i]` for `left` more packets.
    Hold { i: usize, left: u64 },
}

/// One worker's choice of caches in [`CacheMode::Auto`] (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct Governor {
    phase: Phase,
    /// The last round's cycles per 1 024 packets, per mode of [`TRIED`].
    cost: [u64; 3],
    /// Rounds each mode of [`TRIED`] won.
    won: [u64; 3],
    /// The last round's winner and how many rounds before it in a row it
    /// also won.
    last: Option<(usize, u32)>,
}

impl Default for Governor {
    fn default() -> Self {
        Governor {
            phase: Phase::Try { i: 0, seen: 0, packets: 0, cycles: 0 },
            cost: [0; 3],
            won: [0; 3],
            last: None,
        }
    }
}

/// What a governor has decided so far, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Choices {
    /// The mode bursts run in now.
    pub now: CacheMode,
    /// Rounds won by on, megaflow and off.
    pub won: [u64; 3],
    /// The last complete round's cycles per 1 024 packets for on,
    /// megaflow and off (0 before the first round ends).
    pub cost: [u64; 3],
}

impl Governor {
    /// The mode the next burst runs in.
    #[inline]
    pub fn mode(&self) -> CacheMode {
        let (Phase::Try { i, .. } | Phase::Hold { i, .. }) = self.phase;
        TRIED.get(i).copied().unwrap_or(CacheMode::On)
    }

    /// A burst of `packets` packets ran in [`Governor::mode`] and took
    /// `cycles` cycles.
    pub fn account(&mut self, packets: usize, cycles: u64) {
        let n = packets as u64;
        self.phase = match self.phase {
            Phase::Hold { i, left } if left > n => Phase::Hold { i, left: left - n },
            Phase::Hold { .. } => Phase::Try { i: 0, seen: 0, packets: 0, cycles: 0 },
            Phase::Try { i, seen, mut packets, cycles: mut c } => {
                let warm = if i == 0 && self.last.is_none() { FIRST_WARM } else { WARM };
                if seen >= warm && cycles <= PREEMPTED {
                    packets += n;
                    c += cycles;
                }
                if packets < MEASURE {
                    Phase::Try { i, seen: seen + n, packets, cycles: c }
                } else {
                    if let Some(k) = self.cost.get_mut(i) {
                        *k = c.saturating_mul(1024) / packets.max(1);
                    }
                    if i + 1 < TRIED.len() {
                        Phase::Try { i: i + 1, seen: 0, packets: 0, cycles: 0 }
                    } else {
                        let best = (0..TRIED.len()).min_by_key(|&m| self.cost[m]).unwrap_or(0);
                        if let Some(w) = self.won.get_mut(best) {
                            *w += 1;
                        }
                        let streak = match self.last {
                            Some((j, s)) if j == best => (s + 1).min(MAX_STREAK),
                            _ => 0,
                        };
                        self.last = Some((best, streak));
                        Phase::Hold { i: best, left: HOLD << streak }
                    }
                }
            }
        };
    }

    /// What it has decided so far.
    pub fn choices(&self) -> Choices {
        Choices { now: self.mode(), won: self.won, cost: self.cost }
    }
}

/// A reading of the CPU's cycle counter (the time-stamp counter on
/// x86-64; elsewhere nanoseconds of a monotonic clock). Only differences
/// on one thread are meaningful.
#[inline]
pub fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        tsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::LazyLock;
        use std::time::Instant;
        static START: LazyLock<Instant> = LazyLock::new(Instant::now);
        START.elapsed().as_nanos() as u64
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline]
fn tsc() -> u64 {
    // SAFETY: `rdtsc` reads a counter: no memory access, no faults in
    // user mode on Linux, and it is part of the x86-64 baseline.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `g` packets one at a time, each costing `cost(mode)` cycles,
    /// until `packets` have run; return the packets run per mode.
    fn drive(g: &mut Governor, packets: u64, cost: impl Fn(CacheMode) -> u64) -> [u64; 3] {
        let mut ran = [0; 3];
        for _ in 0..packets {
            let m = g.mode();
            let i = TRIED.iter().position(|&t| t == m).unwrap();
            ran[i] += 1;
            g.account(1, cost(m));
        }
        ran
    }

    /// Packets in a round whose winner has won `streak` rounds before it
    /// in a row.
    fn round(streak: u32) -> u64 {
        3 * (WARM + MEASURE) + (HOLD << streak.min(MAX_STREAK))
    }

    const ROUND: u64 = 3 * (WARM + MEASURE) + HOLD;
    /// What a worker's first round runs more than the others.
    const EXTRA: u64 = FIRST_WARM - WARM;

    #[test]
    fn keeps_the_cheapest_mode_between_rounds() {
        for best in TRIED {
            let mut g = Governor::default();
            let cost = |m: CacheMode| if m == best { 1_000 } else { 3_000 };
            let total: u64 = EXTRA + (0..4).map(round).sum::<u64>();
            let ran = drive(&mut g, total, cost);
            let b = TRIED.iter().position(|&t| t == best).unwrap();
            // Everything but the other modes' tries ran in the best mode
            // (the first round's longer warm-up is on's).
            let extra = if best == CacheMode::On { 0 } else { EXTRA };
            assert_eq!(ran[b], total - 4 * 2 * (WARM + MEASURE) - extra, "{best:?}");
            assert_eq!(g.choices().won[b], 4, "{best:?}");
            assert_eq!(g.choices().cost[b], 1_000 * 1024);
        }
    }

    #[test]
    fn holds_a_repeated_winner_longer_and_a_new_one_as_the_first() {
        let mut g = Governor::default();
        let off = |m: CacheMode| if m == CacheMode::Off { 10 } else { 50 };
        // Off wins three rounds: held HOLD, 2 HOLD, then 4 HOLD packets.
        drive(&mut g, EXTRA + round(0) + round(1), off);
        assert_eq!(g.phase, Phase::Try { i: 0, seen: 0, packets: 0, cycles: 0 });
        drive(&mut g, round(2) - 1, off);
        assert_eq!(g.phase, Phase::Hold { i: 2, left: 1 });
        // The workload changes: the next round's winner is held HOLD.
        drive(&mut g, 1, off);
        drive(&mut g, 3 * (WARM + MEASURE), |m| if m == CacheMode::On { 10 } else { 50 });
        assert_eq!(g.phase, Phase::Hold { i: 0, left: HOLD });
        assert_eq!(g.choices().won, [1, 0, 3]);
    }

    #[test]
    fn follows_a_change_of_workload_at_the_next_round() {
        let mut g = Governor::default();
        // Ends inside the first hold, then inside the second.
        drive(&mut g, EXTRA + ROUND - 1, |m| if m == CacheMode::Off { 10 } else { 50 });
        assert_eq!(g.mode(), CacheMode::Off);
        drive(&mut g, ROUND, |m| if m == CacheMode::On { 10 } else { 50 });
        assert_eq!(g.mode(), CacheMode::On);
        assert_eq!(g.choices().won, [1, 0, 1]);
    }

    #[test]
    fn warm_up_and_preempted_bursts_are_not_measured() {
        let mut g = Governor::default();
        // On's warm-up is dear (refilling its caches) and its first
        // measured packet was preempted; the rest of it is cheap. The
        // other modes cost 20 a packet.
        let mut seen = 0;
        for _ in 0..EXTRA + 3 * (WARM + MEASURE) + 1 {
            let m = g.mode();
            let c = match m {
                CacheMode::On if seen < FIRST_WARM => 1_000_000,
                CacheMode::On if seen == FIRST_WARM => PREEMPTED + 1,
                CacheMode::On => 10,
                _ => 20,
            };
            if m == CacheMode::On {
                seen += 1;
            }
            g.account(1, c);
        }
        assert_eq!(g.mode(), CacheMode::On);
        assert_eq!(g.choices().cost, [10 * 1024, 20 * 1024, 20 * 1024]);
    }

    #[test]
    fn a_burst_counts_all_its_packets() {
        let mut g = Governor::default();
        // One burst larger than a try's warm-up and measure together
        // still moves the round on by one mode, never past it.
        g.account((FIRST_WARM + (WARM + MEASURE) * 4) as usize, 100);
        assert_eq!(g.mode(), CacheMode::On);
        g.account(MEASURE as usize, 100);
        assert_eq!(g.mode(), CacheMode::Megaflow);
    }
}
