//! The full-body solver under gameplay goals (see `tests/support/gameplay.rs`): a walk with
//! FK-consistent goals (control), over uneven ground, with hands reaching in and out of reach
//! and the head looking around, and both — on the procedural test rigs (every naming
//! convention, two rest-axis styles each) and the CC0 characters in `assets/`, warm-started
//! frame to frame with default settings.
//!
//! `IK_GAMEPLAY_MISSES=1` prints every feasible goal-frame missed (rig, frame, goal, residual in
//! mm|°, frames since the goal became feasible).
//!
//! `IK_GAMEPLAY_PELVIS_POSITION=1` gives the pelvis a position-only goal (as `bevy_ik`'s
//! `IkHumanoid` and its crowd bench do; the hips then turn freely).
//!
//! `IK_GAMEPLAY_PER_RIG=1` also prints each rig's fastest-of-5 median / p99 / max per scenario
//! (which rig sets the tail).
//!
//! Prints per scenario: median / p99 / max µs per solve, frames over 1 ms, flips (a joint
//! turning more than 20° in one frame), the largest per-frame joint turn, feasible goals met at
//! 1 mm / 1° (feasibility decided by a cold oracle, see the support module), frozen frames,
//! and how many of the missed feasible goal-frames are *feasible only by a flip* — met by no
//! pose found within 20° of the previous frame's output (the oracle's pose and a warm
//! oracle's from the previous output both turn a joint further, or miss): the issue's own
//! constraint (no joint turning more than 20° while the goals move less) forbids them to a
//! tracker. They stay counted as feasible and missed in the first percentage; the second
//! leaves them out (see `flip_only_misses` in the support module).
//! Then criterion times whole sequences of each scenario on the Mixamo-named test rig (per
//! frame: its time over the frame count).
//!
//! `IK_GAMEPLAY_FRAMES` sets the frames per rig and scenario (default 240: 4 s at 60 Hz).

use core::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::humanoid::FullBodyReport;

#[path = "../tests/support/gameplay.rs"]
mod gameplay;
use gameplay::{
    Frame, GoalMask, OutputHash, Rig, Run, Scenario, rigs, run, scenario_frames, track,
};

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

struct Prepared {
    rig: Rig,
    frames: Vec<Frame>,
    feasible: Vec<GoalMask>,
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("IK_GAMEPLAY_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240);
    let all_rigs = rigs(true);
    eprintln!(
        "gameplay: {} rigs ({}), {n} frames each per scenario",
        all_rigs.len(),
        all_rigs
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    eprintln!(
        "{:<8} | {:^26} | {:^34} | {:>6} {:>6} {:>8} | {:>22} | {:>6}",
        "scenario",
        "wall µs: median p99 max",
        "fastest of 5: mean median p99 max",
        ">1ms",
        "flips",
        "max turn",
        "feasible met (frames)",
        "frozen"
    );
    let mut timed: Vec<(Scenario, Prepared)> = Vec::new();
    for scenario in Scenario::ALL {
        let mut total = Run::default();
        // What the runs are given (equal on two builds given the same goals), and what the
        // oracle found feasible.
        let (mut goal_hash, mut feasible_hash) = (OutputHash::default(), OutputHash::default());
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        // Per iteration count (9 = 9 or more) and converged: solves and summed µs.
        let mut profile = [[(0usize, 0.0f64); 2]; 10];
        // With IK_GAMEPLAY_MISSES: misses the warm oracle meets within 20° of the previous
        // output (of those, within the tracking budget of 6 iterations), and the rest.
        let mut classes = [0usize; 3];
        // Missed feasible goal-frames that only a flip (> 20° in one frame) meets.
        let mut flip_only = 0usize;
        for (ri, rig_src) in all_rigs.iter().enumerate() {
            let rig = Rig::new(rig_src.name.clone(), rig_src.skeleton.clone()).expect("maps");
            let frames = scenario_frames(&rig, scenario, n, ri as u32 + 1);
            let (feasible, oracle_poses, oracle_restarts) =
                gameplay::feasible_goals_with_poses(&rig, &frames);
            goal_hash.frames(&frames);
            feasible_hash.debug(&feasible);
            let mut solver = rig.solver();
            // One untimed pass to warm caches, then the timed one from a fresh solver.
            let _ = run(&rig, &mut solver, &frames, &feasible, false, track);
            let mut solver = rig.solver();
            let r = run(&rig, &mut solver, &frames, &feasible, true, track);
            if std::env::var("IK_GAMEPLAY_MISSES").is_ok() {
                // Again untimed, keeping each frame's report: which goals gave way, iterations.
                let mut reports = vec![FullBodyReport::default(); frames.len()];
                let mut probes = vec![[0.0f32; 5]; frames.len()];
                // Is the missed goal met by a pose near the previous frame's output? Largest
                // joint turn from the previous output to: the oracle's pose of the frame (and
                // the restarts it used), the long probe with the infeasible goals off, and a
                // warm oracle (a cold solve without restarts, 200 iterations, the infeasible
                // goals off, from the previous output) with its residual.
                let roles: Vec<usize> = rig.map.iter().map(|(_, b)| b).collect();
                let turn = |a: &ik_core::Pose, b: &ik_core::Pose| {
                    roles
                        .iter()
                        .map(|&j| a.rotations[j].angle_between(b.rotations[j]).to_degrees())
                        .fold(0.0f32, f32::max)
                };
                let mut near = vec![[0.0f32; 7]; frames.len()];
                let miss_frames: Vec<(usize, usize)> =
                    r.misses.iter().map(|m| (m.frame, m.goal)).collect();
                let mut solver = rig.solver();
                let _ = run(
                    &rig,
                    &mut solver,
                    &frames,
                    &feasible,
                    false,
                    |s, sk, p, g, f| {
                        if let Some(&(_, k)) = miss_frames.iter().find(|m| m.0 == f) {
                            // (a) a long budget, (b) the infeasible goals off, (c) both.
                            let mut only = *g;
                            for (j, on) in feasible[f].iter().enumerate() {
                                if !on {
                                    if j < 5 {
                                        only.effectors[j].enabled = false;
                                    } else {
                                        only.look_at.enabled = false;
                                    }
                                }
                            }
                            for (i, (goals, long)) in [(g, true), (&only, false), (&only, true)]
                                .into_iter()
                                .enumerate()
                            {
                                let (mut s2, mut p2) = (s.clone(), p.clone());
                                if long {
                                    s2.settings_mut().max_iterations = 200;
                                }
                                let _ = s2.solve(sk, &mut p2, goals);
                                let m = gameplay::measure(&rig, &s2, &p2, g);
                                probes[f][i] = gameplay::goal_error(&m, k, rig.scale);
                                if i == 2 {
                                    near[f][1] = turn(p, &p2);
                                }
                            }
                            near[f][0] = turn(p, &oracle_poses[f]);
                            {
                                let (mut s2, mut p2) = (s.clone(), p.clone());
                                s2.settings_mut().cold_iterations = 200;
                                s2.settings_mut().max_restarts = 0;
                                let it = s2
                                    .solve_cold(sk, &mut p2, &only)
                                    .map_or(0, |r| r.iterations);
                                let m = gameplay::measure(&rig, &s2, &p2, g);
                                near[f][2] = gameplay::goal_error(&m, k, rig.scale);
                                near[f][3] = turn(p, &p2);
                                near[f][4] = it as f32;
                                for (i, budget) in [(5, 6), (6, 12)] {
                                    let (mut s2, mut p2) = (s.clone(), p.clone());
                                    s2.settings_mut().cold_iterations = budget;
                                    s2.settings_mut().max_restarts = 0;
                                    let _ = s2.solve_cold(sk, &mut p2, g);
                                    let m = gameplay::measure(&rig, &s2, &p2, g);
                                    near[f][i] = gameplay::goal_error(&m, k, rig.scale);
                                }
                            }
                            // Without the give-way state: default and long budgets.
                            for (i, long) in [(3, false), (4, true)] {
                                let (mut s2, mut p2) = (s.clone(), p.clone());
                                if long {
                                    s2.settings_mut().max_iterations = 200;
                                }
                                let mut fresh = s2.scratch();
                                let _ = s2.solve_with(sk, &mut p2, g, &mut fresh);
                                let m = gameplay::measure(&rig, &s2, &p2, g);
                                probes[f][i] = gameplay::goal_error(&m, k, rig.scale);
                            }
                        }
                        let r = if f == 0 {
                            s.solve_cold(sk, p, g)
                        } else {
                            s.solve(sk, p, g)
                        };
                        r.map(|r| reports[f] = r).is_ok()
                    },
                );
                for m in &r.misses {
                    let rep = &reports[m.frame];
                    let n = near[m.frame];
                    if n[2] <= 1.0 && n[3] <= 20.0 {
                        classes[0] += 1;
                        classes[1] += usize::from(n[4] <= 6.0);
                    } else {
                        classes[2] += 1;
                    }
                    eprintln!(
                        "  near {scenario:?} {} frame {} goal {}: oracle pose turn {:.1}° ({} restarts); long+alone turn {:.1}°; warm oracle {:.2} mm|° turn {:.1}° {} it; cold-6 all goals {:.2} cold-12 {:.2}",
                        rig.name,
                        m.frame,
                        m.goal,
                        n[0],
                        oracle_restarts[m.frame],
                        n[1],
                        n[2],
                        n[3],
                        n[4],
                        n[5],
                        n[6]
                    );
                    eprintln!(
                        "  miss {scenario:?} {} frame {}: goal {} off {:.2} mm|°, feasible for {} frames; giving way {:?}, {} iterations; long {:.2} alone {:.2} both {:.2} fresh {:.2} fresh long {:.2}",
                        rig.name,
                        m.frame,
                        m.goal,
                        m.error,
                        m.feasible_for,
                        rep.giving_way
                            .iter()
                            .enumerate()
                            .filter(|(_, g)| **g)
                            .map(|(k, _)| k)
                            .collect::<Vec<_>>(),
                        rep.iterations,
                        probes[m.frame][0],
                        probes[m.frame][1],
                        probes[m.frame][2],
                        probes[m.frame][3],
                        probes[m.frame][4],
                    );
                }
            }
            if std::env::var("IK_GAMEPLAY_PROFILE").is_ok() {
                // Untimed again, keeping each frame's iterations and whether it converged.
                let mut reports = vec![FullBodyReport::default(); frames.len()];
                let mut solver = rig.solver();
                let _ = run(
                    &rig,
                    &mut solver,
                    &frames,
                    &feasible,
                    false,
                    |s, sk, p, g, f| {
                        let r = if f == 0 {
                            s.solve_cold(sk, p, g)
                        } else {
                            s.solve(sk, p, g)
                        };
                        r.map(|r| reports[f] = r).is_ok()
                    },
                );
                for (f, rep) in reports.iter().enumerate().skip(1) {
                    let b =
                        &mut profile[rep.iterations.min(9) as usize][usize::from(rep.converged)];
                    b.0 += 1;
                    b.1 += r.fastest_us[f];
                }
            }
            if std::env::var("IK_GAMEPLAY_PER_RIG").is_ok() {
                let mut own = r.fastest_us[1..].to_vec();
                own.sort_by(f64::total_cmp);
                eprintln!(
                    "  {scenario:?} {}: fastest-of-5 median {:.1} µs, p99 {:.1} µs, max {:.1} µs",
                    rig.name,
                    percentile(&own, 0.5),
                    percentile(&own, 0.99),
                    own.last().copied().unwrap_or(f64::NAN)
                );
            }
            // Warm solves only: the first frame is the cold solve of a character appearing.
            times.extend_from_slice(&r.times_us[1..]);
            cpu.extend_from_slice(&r.fastest_us[1..]);
            total.flips += r.flips;
            total.largest_turn_deg = total.largest_turn_deg.max(r.largest_turn_deg);
            total.frames_all_feasible_met += r.frames_all_feasible_met;
            total.feasible += r.feasible;
            total.feasible_met += r.feasible_met;
            total.worst_feasible_miss = total.worst_feasible_miss.max(r.worst_feasible_miss);
            total.frozen += r.frozen;
            let flips_only =
                gameplay::flip_only_misses(&rig, &frames, &feasible, &oracle_poses, &r.misses);
            flip_only += flips_only.iter().filter(|&&f| f).count();
            if std::env::var("IK_GAMEPLAY_MISSES").is_ok() {
                for (m, _) in r.misses.iter().zip(&flips_only).filter(|(_, f)| **f) {
                    eprintln!(
                        "  feasible only by a flip: {scenario:?} {} frame {} goal {}",
                        rig.name, m.frame, m.goal
                    );
                }
            }
            total.frames += r.frames;
            total.output_hash.word(r.output_hash.0 as u32);
            total.output_hash.word((r.output_hash.0 >> 32) as u32);
            total.errors += r.errors;
            total.non_finite += r.non_finite;
            if rig.name.starts_with("Mixamo/PlusY") {
                timed.push((
                    scenario,
                    Prepared {
                        rig,
                        frames,
                        feasible,
                    },
                ));
            }
        }
        if std::env::var("IK_GAMEPLAY_PROFILE").is_ok() {
            for (it, b) in profile.iter().enumerate() {
                for (conv, (n, sum)) in b.iter().enumerate() {
                    if *n > 0 {
                        eprintln!(
                            "  {scenario:?} {it} iterations, converged {}: {n} solves, mean {:.1} µs, {:.1} % of the time",
                            conv == 1,
                            sum / *n as f64,
                            sum * 100.0 / cpu.iter().sum::<f64>()
                        );
                    }
                }
            }
        }
        if std::env::var("IK_GAMEPLAY_MISSES").is_ok() {
            eprintln!(
                "  {scenario:?} misses: {} met by a warm oracle within 20° of the previous output ({} of them within 6 iterations), {} only by a posture further away or not at all",
                classes[0], classes[1], classes[2]
            );
        }
        eprintln!(
            "  {scenario:?} output hash (every pose and report, in order): {:016x}; goal hash (every input pose and goal set): {:016x}; oracle's feasible-goal hash: {:016x}",
            total.output_hash.0, goal_hash.0, feasible_hash.0
        );
        times.sort_by(f64::total_cmp);
        cpu.sort_by(f64::total_cmp);
        let over = times.iter().filter(|&&t| t > 1000.0).count();
        // Feasible goal-frames met, and met among those a coherent tracker can meet (the
        // flip-only ones left out of both counts; see `flip_only_misses`).
        let coherent = total.feasible - flip_only;
        eprintln!(
            "{:<8} | {:>7.1} {:>7.1} {:>8.1} | {:>7.1} {:>7.1} {:>7.1} {:>8.1} | {:>5.2}% {:>6} {:>7.1}° | {:>8.2}% ({:>6.2}% frames) | {:>6}   (feasible goal-frames met {} of {}; {} of them feasible only by a flip (> 20° in one frame): met {:.2} % of the rest; worst feasible miss {:.1} mm|°, {} solves, errors {}, non-finite {})",
            format!("{scenario:?}"),
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            times.last().copied().unwrap_or(f64::NAN),
            cpu.iter().sum::<f64>() / cpu.len().max(1) as f64,
            percentile(&cpu, 0.5),
            percentile(&cpu, 0.99),
            cpu.last().copied().unwrap_or(f64::NAN),
            over as f64 * 100.0 / times.len().max(1) as f64,
            total.flips,
            total.largest_turn_deg,
            total.feasible_met as f64 * 100.0 / total.feasible.max(1) as f64,
            total.frames_all_feasible_met as f64 * 100.0 / total.frames.max(1) as f64,
            total.frozen,
            total.feasible_met,
            total.feasible,
            flip_only,
            total.feasible_met as f64 * 100.0 / coherent.max(1) as f64,
            total.worst_feasible_miss,
            times.len(),
            total.errors,
            total.non_finite,
        );
    }
    // Criterion: one whole sequence per iteration (the cold first frame, then tracking), on
    // the Mixamo-named test rig; the per-frame figure is the time over the frame count.
    let mut group = c.benchmark_group("gameplay");
    for (scenario, p) in &timed {
        let mut solver = p.rig.solver();
        let mut pose = p.frames[0].input.clone();
        let _ = &p.feasible;
        group.throughput(criterion::Throughput::Elements(p.frames.len() as u64));
        group.bench_function(format!("{scenario:?}/sequence"), |b| {
            b.iter(|| {
                pose.copy_from(&p.frames[0].input);
                for (f, frame) in p.frames.iter().enumerate() {
                    black_box(track(
                        &mut solver,
                        &p.rig.skeleton,
                        &mut pose,
                        black_box(&frame.goals),
                        f,
                    ));
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
