//! Executors: one file per workload model, all driven by the scheduling core in `scheduler.rs`.
//!
//! The core splits a workload into per-worker [`Assignment`]s up front (VUs, iteration
//! budgets, arrival slots), so workers never coordinate while the run goes on.

mod arrival_pool;
mod arrival_rate;
mod closed;
mod open;
mod per_vu_iterations;
mod ramping_vus;
mod recorded;
mod vu;

use crate::worker::Worker;
use barrage_plan::{RampingVus, Segment, VuStage, Workload};
use std::rc::Rc;
use std::time::Duration;

pub(crate) use arrival_pool::PoolShare;
pub(crate) use arrival_rate::SlotSchedule;
pub(crate) use open::ArrivalShare;
pub(crate) use ramping_vus::RampShare;
pub(crate) use recorded::RecordedShare;

/// One worker's share of the workload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Assignment {
    /// `vus` clients loop over iterations; the budget (if any) lives on the worker.
    Closed { vus: u64 },
    /// `vus` clients serve this worker's slots of the global arrival schedule.
    ArrivalRate { vus: u64, schedule: SlotSchedule },
    /// Clients arrive as this worker's share of the Poisson process and run one session each.
    Open(ArrivalShare),
    /// VUs follow the (run-wide) stages; this worker runs its exact share of the target.
    RampingVus(RampShare),
    /// `vus` VUs each run `iterations` iterations.
    PerVuIterations { vus: u64, iterations: u64 },
    /// This worker's iterations of an arrival-rate schedule, served by its part of the pool.
    ArrivalPool(PoolShare),
    /// This worker's recorded arrivals, each a fresh client running its named session.
    Recorded(RecordedShare),
}

/// A worker's share: what it runs and how many iterations it may start (count-bounded runs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Share {
    pub assignment: Assignment,
    pub iterations: Option<u64>,
}

/// Splits `n` into `parts` near-equal whole shares (the first ones get the remainder).
fn split_evenly(n: u64, parts: usize) -> Vec<u64> {
    let parts_u64 = parts as u64;
    (0..parts_u64)
        .map(|i| n / parts_u64 + u64::from(i < n % parts_u64))
        .collect()
}

/// Splits `n` in proportion to `weights` exactly (largest remainders get the leftovers).
fn split_proportionally(n: u64, weights: &[u64]) -> Vec<u64> {
    let total: u64 = weights.iter().sum::<u64>().max(1);
    let mut shares: Vec<u64> = weights
        .iter()
        .map(|&w| (u128::from(n) * u128::from(w) / u128::from(total)) as u64)
        .collect();
    let mut left = n - shares.iter().sum::<u64>();
    let (mut i, parts) = (0, shares.len());
    while left > 0 {
        shares[i % parts] += 1;
        left -= 1;
        i += 1;
    }
    shares
}

/// Splits this process's segment of the workload over at most `threads` workers (never
/// more workers than clients). Counts (VUs, iteration budgets, clients) are the segment's
/// striped share, split over the workers; rates are the segment's fraction; run-wide
/// sequences (slots, arrival-rate iterations) are dealt to segment `i` of `N` as `k ≡ i (mod
/// N)`, then round-robin to its workers.
pub(crate) fn assign(workload: &Workload, threads: usize, segment: Segment) -> Vec<Share> {
    let clients = match workload {
        Workload::OpenArrivals(open) => open.max_clients.map_or(u64::MAX, |m| segment.share(m)),
        Workload::ArrivalPool(pool) => segment.share(pool.max_vus),
        Workload::RecordedArrivals(recorded) => segment.share(recorded.arrivals.len() as u64),
        other => segment.share(other.vus().unwrap_or(1)),
    };
    let workers = (threads.max(1) as u64).min(clients.max(1)) as usize;
    let stripe = |i: usize| segment.stripe(i as u64, workers as u64);
    match workload {
        Workload::RecordedArrivals(recorded) => {
            let mine: Vec<_> = recorded
                .arrivals
                .iter()
                .enumerate()
                .filter(|(k, _)| *k as u64 % segment.count == segment.index)
                .map(|(_, a)| *a)
                .collect();
            (0..workers)
                .map(|i| Share {
                    assignment: Assignment::Recorded(RecordedShare {
                        arrivals: mine.iter().skip(i).step_by(workers).copied().collect(),
                    }),
                    iterations: None,
                })
                .collect()
        }
        Workload::OpenArrivals(open) => {
            let max_per_worker = open
                .max_clients
                .map(|max| split_evenly(segment.share(max), workers));
            let fraction = segment.fraction() / workers as f64;
            (0..workers)
                .map(|i| Share {
                    assignment: Assignment::Open(ArrivalShare {
                        phases: open
                            .phases
                            .iter()
                            .map(|p| {
                                barrage_plan::ArrivalPhase::new(
                                    p.duration,
                                    p.rate * fraction,
                                    p.ramp_to.map(|r| r * fraction),
                                )
                            })
                            .collect(),
                        max_clients: max_per_worker.as_ref().map(|m| m[i]),
                    }),
                    iterations: None,
                })
                .collect()
        }
        Workload::ClosedVus(_) | Workload::SharedIterations(_) => {
            let (vus, iterations) = match workload {
                Workload::ClosedVus(closed) => (
                    closed.vus,
                    closed.iterations.filter(|_| closed.duration.is_none()),
                ),
                Workload::SharedIterations(shared) => (shared.vus, Some(shared.iterations)),
                _ => unreachable!("matched above"),
            };
            let vus_per_worker = split_evenly(segment.share(vus), workers);
            let budgets =
                iterations.map(|n| split_proportionally(segment.share(n), &vus_per_worker));
            vus_per_worker
                .iter()
                .enumerate()
                .map(|(i, &vus)| Share {
                    assignment: Assignment::Closed { vus },
                    iterations: budgets.as_ref().map(|b| b[i]),
                })
                .collect()
        }
        Workload::ArrivalRate(rate) => {
            let limit = rate.iterations.filter(|_| rate.duration.is_none());
            split_evenly(segment.share(rate.vus), workers)
                .iter()
                .enumerate()
                .map(|(i, &vus)| {
                    let (first_slot, stride) = stripe(i);
                    Share {
                        assignment: Assignment::ArrivalRate {
                            vus,
                            schedule: SlotSchedule {
                                first_slot,
                                stride,
                                rate_per_second: rate.rate_per_second,
                                limit,
                            },
                        },
                        iterations: None,
                    }
                })
                .collect()
        }
        Workload::ConstantVus(_) | Workload::RampingVus(_) => {
            let ramp = match workload {
                Workload::RampingVus(ramp) => ramp.clone(),
                Workload::ConstantVus(c) => RampingVus {
                    start_vus: c.vus,
                    stages: vec![VuStage {
                        duration: c.duration,
                        target: c.vus,
                    }],
                    graceful_stop: c.graceful_stop,
                    graceful_ramp_down: c.graceful_stop,
                },
                _ => unreachable!("matched above"),
            };
            (0..workers)
                .map(|i| Share {
                    assignment: Assignment::RampingVus(RampShare {
                        ramp: ramp.clone(),
                        segment,
                        worker: i as u64,
                        workers: workers as u64,
                    }),
                    iterations: None,
                })
                .collect()
        }
        Workload::PerVuIterations(per_vu) => split_evenly(segment.share(per_vu.vus), workers)
            .into_iter()
            .map(|vus| Share {
                assignment: Assignment::PerVuIterations {
                    vus,
                    iterations: per_vu.iterations_per_vu,
                },
                iterations: None,
            })
            .collect(),
        Workload::ArrivalPool(pool) => {
            let pre = split_evenly(segment.share(pool.pre_allocated_vus), workers);
            let max = split_evenly(segment.share(pool.max_vus), workers);
            (0..workers)
                .map(|i| {
                    let (first, stride) = stripe(i);
                    Share {
                        assignment: Assignment::ArrivalPool(PoolShare {
                            pool: pool.clone(),
                            first,
                            stride,
                            pre_allocated: pre[i],
                            max_vus: max[i],
                        }),
                        iterations: None,
                    }
                })
                .collect()
        }
    }
}

/// Runs one worker's share to its end (budget spent, deadline reached or stop requested
/// between iterations). The core cancels whatever is still running at the deadline.
pub(crate) async fn drive(worker: Rc<Worker>, assignment: Assignment) {
    match assignment {
        Assignment::Closed { vus } => closed::drive(worker, vus).await,
        Assignment::ArrivalRate { vus, schedule } => {
            arrival_rate::drive(worker, vus, schedule).await
        }
        Assignment::Open(share) => open::drive(worker, share).await,
        Assignment::RampingVus(share) => ramping_vus::drive(worker, share).await,
        Assignment::PerVuIterations { vus, iterations } => {
            per_vu_iterations::drive(worker, vus, iterations).await
        }
        Assignment::ArrivalPool(share) => arrival_pool::drive(worker, share).await,
        Assignment::Recorded(share) => recorded::drive(worker, share).await,
    }
}

/// The planned start of slot `k` of a schedule at `rate_per_second`, from the run start.
pub(crate) fn slot_offset(k: u64, rate_per_second: f64) -> Duration {
    Duration::from_secs_f64(k as f64 / rate_per_second)
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::{ArrivalRate, ClosedVus};

    #[test]
    fn splits_are_exact() {
        assert_eq!(split_evenly(10, 3), vec![4, 3, 3]);
        assert_eq!(split_proportionally(10, &[2, 1]), vec![7, 3]);
        assert_eq!(split_proportionally(7, &[1, 1, 1]).iter().sum::<u64>(), 7);
    }

    #[test]
    fn closed_budget_follows_vus_and_never_more_workers_than_vus() {
        let w = Workload::ClosedVus(ClosedVus {
            vus: 3,
            duration: None,
            iterations: Some(100),
        });
        let shares = assign(&w, 2, Segment::WHOLE);
        assert_eq!(shares.len(), 2);
        assert_eq!(shares[0].assignment, Assignment::Closed { vus: 2 });
        assert_eq!(
            shares.iter().map(|s| s.iterations.unwrap()).sum::<u64>(),
            100
        );
        let w = Workload::ClosedVus(ClosedVus {
            vus: 1,
            duration: None,
            iterations: Some(5),
        });
        assert_eq!(assign(&w, 8, Segment::WHOLE).len(), 1);
    }

    #[test]
    fn arrival_slots_interleave_across_workers() {
        let w = Workload::ArrivalRate(ArrivalRate {
            rate_per_second: 100.0,
            vus: 4,
            duration: None,
            iterations: Some(9),
        });
        let shares = assign(&w, 2, Segment::WHOLE);
        let slots: Vec<(u64, u64)> = shares
            .iter()
            .map(|s| match &s.assignment {
                Assignment::ArrivalRate { schedule, .. } => (schedule.first_slot, schedule.stride),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(slots, vec![(0, 2), (1, 2)]);
        assert_eq!(slot_offset(50, 100.0), Duration::from_millis(500));
    }

    #[test]
    fn recorded_arrivals_are_dealt_to_exactly_one_worker_of_one_segment() {
        let arrivals: Vec<barrage_plan::RecordedArrival> = (0..11)
            .map(|k| barrage_plan::RecordedArrival {
                offset: Duration::from_millis(k * 10),
                session: (k % 2) as usize,
            })
            .collect();
        let w = Workload::RecordedArrivals(barrage_plan::RecordedArrivals {
            arrivals: arrivals.clone(),
            grace_period: Duration::ZERO,
        });
        let mut dealt = Vec::new();
        for segment in segments(3) {
            for share in assign(&w, 2, segment) {
                let Assignment::Recorded(share) = share.assignment else {
                    panic!("{share:?}")
                };
                assert!(share
                    .arrivals
                    .windows(2)
                    .all(|p| p[0].offset <= p[1].offset));
                dealt.extend(share.arrivals);
            }
        }
        dealt.sort_by_key(|a| a.offset);
        assert_eq!(dealt, arrivals);
    }

    fn segments(count: u64) -> impl Iterator<Item = Segment> {
        (0..count).map(move |index| Segment { index, count })
    }

    #[test]
    fn segments_together_run_exactly_the_whole_workload() {
        let closed = Workload::ClosedVus(ClosedVus {
            vus: 10,
            duration: None,
            iterations: Some(101),
        });
        let (mut vus, mut budget) = (0, 0);
        for segment in segments(4) {
            for share in assign(&closed, 3, segment) {
                let Assignment::Closed { vus: v } = share.assignment else {
                    panic!("{share:?}")
                };
                vus += v;
                budget += share.iterations.unwrap();
            }
        }
        assert_eq!((vus, budget), (10, 101));

        // Paced slots: every slot of the run belongs to exactly one worker of one segment.
        let paced = Workload::ArrivalRate(ArrivalRate {
            rate_per_second: 100.0,
            vus: 8,
            duration: None,
            iterations: Some(50),
        });
        let mut slots = Vec::new();
        for segment in segments(3) {
            for share in assign(&paced, 2, segment) {
                let Assignment::ArrivalRate { schedule, .. } = share.assignment else {
                    panic!("{share:?}")
                };
                slots.extend(
                    (schedule.first_slot..schedule.limit.unwrap())
                        .step_by(schedule.stride as usize),
                );
            }
        }
        slots.sort_unstable();
        assert_eq!(slots, (0..50).collect::<Vec<_>>());

        // Ramping VUs: the segments' workers' shares sum to the target at every value.
        let ramp = Workload::RampingVus(RampingVus {
            start_vus: 0,
            stages: vec![VuStage {
                duration: Duration::from_secs(10),
                target: 37,
            }],
            graceful_stop: Duration::ZERO,
            graceful_ramp_down: Duration::ZERO,
        });
        let shares: Vec<RampShare> = segments(4)
            .flat_map(|segment| assign(&ramp, 2, segment))
            .map(|share| match share.assignment {
                Assignment::RampingVus(r) => r,
                other => panic!("{other:?}"),
            })
            .collect();
        for target in 0..=37 {
            assert_eq!(
                shares.iter().map(|s| s.share_of(target)).sum::<u64>(),
                target
            );
        }
    }
}
