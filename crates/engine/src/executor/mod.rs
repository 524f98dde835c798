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
mod start;
mod vu;

use crate::worker::Worker;
use barrage_plan::{Admission, Bound, Segment, Workload};
use std::rc::Rc;

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

impl Assignment {
    /// The VUs this worker starts with (k6 initialises them before the test): a closed
    /// model's VUs, a ramp's peak share, an arrival pool's pre-allocated ones.
    pub(crate) fn initial_vus(&self) -> u64 {
        match self {
            Assignment::Closed { vus }
            | Assignment::ArrivalRate { vus, .. }
            | Assignment::PerVuIterations { vus, .. } => *vus,
            Assignment::RampingVus(share) => {
                share.share_of(share.schedule.peak().floor().max(0.0) as u64)
            }
            Assignment::ArrivalPool(share) => share.pre_allocated,
            Assignment::Open(_) | Assignment::Recorded(_) => 0,
        }
    }
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
/// N)`, then round-robin to its workers. The admission picks the executor; a closed model
/// whose client count changes over time is the ramping one.
pub(crate) fn assign(workload: &Workload, threads: usize, segment: &Segment) -> Vec<Share> {
    let clients = match &workload.admission {
        Admission::PerArrival { max_clients } => max_clients.map_or(u64::MAX, |m| segment.share(m)),
        Admission::Recorded { arrivals } => segment.share(arrivals.len() as u64),
        _ => segment.share(workload.vus().unwrap_or(1)),
    };
    let workers = (threads.max(1) as u64).min(clients.max(1)) as usize;
    let striping = segment.striping();
    let stripe = |i: usize| striping.stripe(i as u64, workers as u64);
    let budget = match workload.bound {
        Bound::Iterations {
            count, per_client, ..
        } => Some((count, per_client)),
        Bound::Duration => None,
    };
    match workload.admission {
        Admission::Recorded { ref arrivals } => (0..workers)
            .map(|i| {
                // This worker's stripe of the run's arrivals (its segment's, round-robin).
                let stripe = stripe(i);
                Share {
                    assignment: Assignment::Recorded(RecordedShare {
                        arrivals: (0..)
                            .map(|m| stripe.nth(m) as usize)
                            .map_while(|k| arrivals.get(k).copied())
                            .collect(),
                    }),
                    iterations: None,
                }
            })
            .collect(),
        Admission::PerArrival { max_clients } => {
            let max_per_worker = max_clients.map(|max| split_evenly(segment.share(max), workers));
            let schedule = workload.schedule.scale(segment.fraction() / workers as f64);
            (0..workers)
                .map(|i| Share {
                    assignment: Assignment::Open(ArrivalShare {
                        schedule: schedule.clone(),
                        max_clients: max_per_worker.as_ref().map(|m| m[i]),
                    }),
                    iterations: None,
                })
                .collect()
        }
        Admission::Loop if workload.ramps_clients() => (0..workers)
            .map(|i| Share {
                assignment: Assignment::RampingVus(RampShare {
                    schedule: workload.schedule.clone(),
                    ramp_down: workload.grace.ramp_down,
                    segment: striping.clone(),
                    worker: i as u64,
                    workers: workers as u64,
                }),
                iterations: None,
            })
            .collect(),
        Admission::Loop => {
            let vus = workload.vus().unwrap_or(1);
            let vus_per_worker = split_evenly(segment.share(vus), workers);
            match budget {
                Some((per_vu, true)) => vus_per_worker
                    .into_iter()
                    .map(|vus| Share {
                        assignment: Assignment::PerVuIterations {
                            vus,
                            iterations: per_vu,
                        },
                        iterations: None,
                    })
                    .collect(),
                _ => {
                    let budgets = budget
                        .map(|(n, _)| split_proportionally(segment.share(n), &vus_per_worker));
                    vus_per_worker
                        .iter()
                        .enumerate()
                        .map(|(i, &vus)| Share {
                            assignment: Assignment::Closed { vus },
                            iterations: budgets.as_ref().map(|b| b[i]),
                        })
                        .collect()
                }
            }
        }
        Admission::Paced { clients } => {
            let limit = budget.map(|(n, _)| n);
            split_evenly(segment.share(clients), workers)
                .iter()
                .enumerate()
                .map(|(i, &vus)| Share {
                    assignment: Assignment::ArrivalRate {
                        vus,
                        schedule: SlotSchedule {
                            slots: stripe(i),
                            rate: workload.schedule.clone(),
                            limit,
                        },
                    },
                    iterations: None,
                })
                .collect()
        }
        Admission::GrowAndDrop {
            pre_allocated, max, ..
        } => {
            let pre = split_evenly(segment.share(pre_allocated), workers);
            let max = split_evenly(segment.share(max), workers);
            (0..workers)
                .map(|i| Share {
                    assignment: Assignment::ArrivalPool(PoolShare {
                        rate: workload.schedule.clone(),
                        iterations: stripe(i),
                        pre_allocated: pre[i],
                        max_vus: max[i],
                    }),
                    iterations: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn splits_are_exact() {
        assert_eq!(split_evenly(10, 3), vec![4, 3, 3]);
        assert_eq!(split_proportionally(10, &[2, 1]), vec![7, 3]);
        assert_eq!(split_proportionally(7, &[1, 1, 1]).iter().sum::<u64>(), 7);
    }

    #[test]
    fn closed_budget_follows_vus_and_never_more_workers_than_vus() {
        let w = Workload::closed(3, None, Some(100));
        let shares = assign(&w, 2, &Segment::WHOLE);
        assert_eq!(shares.len(), 2);
        assert_eq!(shares[0].assignment, Assignment::Closed { vus: 2 });
        assert_eq!(
            shares.iter().map(|s| s.iterations.unwrap()).sum::<u64>(),
            100
        );
        let w = Workload::closed(1, None, Some(5));
        assert_eq!(assign(&w, 8, &Segment::WHOLE).len(), 1);
    }

    #[test]
    fn arrival_slots_interleave_across_workers() {
        let w = Workload::paced(100.0, 4, None, Some(9));
        let shares = assign(&w, 2, &Segment::WHOLE);
        let slots: Vec<(u64, u64)> = shares
            .iter()
            .map(|s| match &s.assignment {
                Assignment::ArrivalRate { schedule, .. } => {
                    (schedule.slots.nth(0), schedule.slots.nth(1))
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(slots, vec![(0, 2), (1, 3)]);
        let rate = barrage_plan::Stages::constant(100.0);
        assert_eq!(rate.time_of(50.0), Some(Duration::from_millis(500)));
    }

    #[test]
    fn recorded_arrivals_are_dealt_to_exactly_one_worker_of_one_segment() {
        let arrivals: Vec<barrage_plan::RecordedArrival> = (0..11)
            .map(|k| barrage_plan::RecordedArrival {
                offset: Duration::from_millis(k * 10),
                session: (k % 2) as usize,
            })
            .collect();
        let w = Workload::recorded(arrivals.clone(), Duration::ZERO);
        let mut dealt = Vec::new();
        for segment in segments(3) {
            for share in assign(&w, 2, &segment) {
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
        (0..count).map(move |index| Segment::equal(index, count))
    }

    #[test]
    fn segments_together_run_exactly_the_whole_workload() {
        let closed = Workload::closed(10, None, Some(101));
        let (mut vus, mut budget) = (0, 0);
        for segment in segments(4) {
            for share in assign(&closed, 3, &segment) {
                let Assignment::Closed { vus: v } = share.assignment else {
                    panic!("{share:?}")
                };
                vus += v;
                budget += share.iterations.unwrap();
            }
        }
        assert_eq!((vus, budget), (10, 101));

        // Paced slots: every slot of the run belongs to exactly one worker of one segment.
        let paced = Workload::paced(100.0, 8, None, Some(50));
        let parts: Vec<Segment> = segments(3).collect();
        assert_eq!(paced_slots(&paced, &parts), (0..50).collect::<Vec<_>>());

        // Ramping VUs: the segments' workers' shares sum to the target at every value.
        let ramp = Workload::ramping_vus(
            0,
            &[(Duration::from_secs(10), 37)],
            Duration::ZERO,
            Duration::ZERO,
        );
        let shares: Vec<RampShare> = segments(4)
            .flat_map(|segment| assign(&ramp, 2, &segment))
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

    /// Every paced slot the segments' workers (two per segment) take, sorted.
    fn paced_slots(paced: &Workload, parts: &[Segment]) -> Vec<u64> {
        let mut slots = Vec::new();
        for segment in parts {
            for share in assign(paced, 2, segment) {
                let Assignment::ArrivalRate { schedule, .. } = share.assignment else {
                    panic!("{share:?}")
                };
                let limit = schedule.limit.unwrap();
                slots.extend(
                    (0..)
                        .map(|m| schedule.slots.nth(m))
                        .take_while(|&k| k < limit),
                );
            }
        }
        slots.sort_unstable();
        slots
    }

    #[test]
    fn unequal_segments_together_run_exactly_the_whole_workload() {
        let sequence = "0,1/10,1/3,1/2,1";
        let parts: Vec<Segment> = ["0:1/10", "1/10:1/3", "1/3:1/2", "1/2:1"]
            .iter()
            .map(|s| Segment::from_k6(s, Some(sequence)).unwrap())
            .collect();
        // Closed VUs and a shared budget.
        let closed = Workload::closed(23, None, Some(1001));
        let (mut vus, mut budget) = (0, 0);
        for segment in &parts {
            for share in assign(&closed, 3, segment) {
                let Assignment::Closed { vus: v } = share.assignment else {
                    panic!("{share:?}")
                };
                vus += v;
                budget += share.iterations.unwrap();
            }
        }
        assert_eq!((vus, budget), (23, 1001));
        // Paced slots: each of the run's slots is one worker's of one segment.
        let paced = Workload::paced(100.0, 40, None, Some(300));
        assert_eq!(paced_slots(&paced, &parts), (0..300).collect::<Vec<_>>());
        // Open arrivals: the segments' rates add up to the test's.
        let open = Workload::open(
            barrage_plan::Stages::from_targets(90.0, [(Duration::from_secs(10), 90.0)]),
            None,
            Duration::ZERO,
        );
        let total: f64 = parts
            .iter()
            .flat_map(|segment| assign(&open, 2, segment))
            .map(|share| match share.assignment {
                Assignment::Open(o) => o.schedule.total(),
                other => panic!("{other:?}"),
            })
            .sum();
        assert!((total - 900.0).abs() < 1e-9, "{total}");
        // Ramping VUs: the shares sum to the target at every value of the ramp.
        let ramp = Workload::ramping_vus(
            0,
            &[(Duration::from_secs(10), 61)],
            Duration::ZERO,
            Duration::ZERO,
        );
        let shares: Vec<RampShare> = parts
            .iter()
            .flat_map(|segment| assign(&ramp, 3, segment))
            .map(|share| match share.assignment {
                Assignment::RampingVus(r) => r,
                other => panic!("{other:?}"),
            })
            .collect();
        for target in 0..=61 {
            assert_eq!(
                shares.iter().map(|s| s.share_of(target)).sum::<u64>(),
                target
            );
        }
    }
}
