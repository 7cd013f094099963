//! Issue 24's robustness suite at full size (see `tests/support/robustness.rs`; the tests
//! run the same scenarios at CI size): one table per scenario, each figure next to the issue's
//! threshold.
//!
//! * still goals: ≥ 1,000 seeded goal sets per kind (36 per rig on the 24 test rigs and the CC0
//!   characters), each held 120 frames;
//! * moving 6D gameplay goals: 2 sequences of 240 frames per rig; warm solve times are the
//!   fastest of 5 runs of each solve from the same state (as `benches/gameplay.rs`);
//! * the VR body: 2 seeded scripts of about 40 s at 72 Hz per rig; per-frame times the fastest of 5
//!   passes over the first script;
//! * cold: 250 goal sets per CC0 character, fastest of 5 per solve.
//!
//! The measuring passes run on every core; the timed passes one at a time on one thread.
//! `IK_ROBUSTNESS_SIZE=ci` runs the tests' sizes; `IK_ROBUSTNESS_ONLY=still|moving|vr|cold`
//! one scenario (`IK_ROBUSTNESS_STILL=AllRandom`, a kind's name: that still kind alone),
//! `IK_ROBUSTNESS_ONLY=warm` the moving scenario's solves alone (to profile),
//! `IK_STILL_TRACE=<kind>,<rig>,<seed>` one still run frame by frame (see `trace_still`).
//! Then criterion times one still sequence (a hand 10–40 % beyond reach, 120 frames, on the
//! Mixamo-named test rig).

use core::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ik_core::vr::VrBody;

#[path = "../tests/support/gameplay.rs"]
mod gameplay;
#[path = "../tests/support/rng.rs"]
mod rng;
#[path = "../tests/support/robustness.rs"]
mod robustness;
#[path = "../tests/support/vr_recording.rs"]
mod vr_recording;
use robustness::*;

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (
        percentile(&v, 0.5),
        percentile(&v, 0.99),
        v.last().copied().unwrap_or(f64::NAN),
    )
}

/// The runs' output hashes folded in order: equal on two builds when every output is
/// bit-identical (a check that an optimisation changed no result).
fn combined(hashes: impl Iterator<Item = OutputHash>) -> u64 {
    let mut all = OutputHash::default();
    for h in hashes {
        all.word(h.0 as u32);
        all.word((h.0 >> 32) as u32);
    }
    all.0
}

fn still(rigs: &[Rig], size: Size) {
    eprintln!(
        "\nstill goals: {} goal sets per kind ({} per rig), {} frames each; settled = bit-identical by frame {SETTLE_FRAMES} (issue: 100 %); stationary = every joint within {STATIONARY_DEG}° of the previous frame",
        rigs.len() * size.still_seeds,
        size.still_seeds,
        size.still_frames
    );
    eprintln!(
        "{:<11} | {:>15} | {:>15} | {:>7} {:>6} | {:>8} {:>9} | {:>7} {:>7} | {:>17} | {:>9} | {:>4}",
        "kind",
        "settled ≤30",
        "stationary ≤30",
        "never",
        "latest",
        "max turn",
        "after 30",
        ">15°",
        ">20°",
        "others >1mm|°",
        "met at end",
        "err"
    );
    // `IK_ROBUSTNESS_STILL=AllRandom` (a kind's name): that kind alone.
    let only = std::env::var("IK_ROBUSTNESS_STILL").ok();
    for kind in StillKind::ALL {
        if only.as_deref().is_some_and(|o| o != format!("{kind:?}")) {
            continue;
        }
        let runs = still_runs(rigs, kind, size);
        let s = summarize_still(&runs);
        let pct = |n: usize| n as f64 * 100.0 / s.runs.max(1) as f64;
        let others = if kind == StillKind::HandBeyond || kind == StillKind::HandFar {
            format!("{} ({:.2})", s.others_moved, s.others_error)
        } else {
            "-".into()
        };
        eprintln!(
            "{:<11} | {:>5} {:>8.1} % | {:>5} {:>8.1} % | {:>7} {:>6} | {:>7.1}° {:>8.2}° | {:>7} {:>7} | {:>17} | {:>7.1} % | {:>4}",
            format!("{kind:?}"),
            s.settled,
            pct(s.settled),
            s.stationary,
            pct(s.stationary),
            s.never_stationary,
            s.latest_stationary,
            s.max_turn_deg,
            s.late_turn_deg,
            s.over_bound,
            s.flips,
            others,
            pct(s.final_met),
            s.failures
        );
        eprintln!(
            "    output hash (every pose and report, in order): {:016x}; goal hash (every start pose and goal set): {:016x}",
            combined(runs.iter().map(|(_, r)| r.output_hash)),
            combined(runs.iter().map(|(_, r)| r.goal_hash))
        );
        let worst: Vec<String> = runs
            .iter()
            .enumerate()
            .filter(|(_, (_, r))| !r.settled())
            .take(6)
            .map(|(n, (i, r))| {
                format!(
                    "{} seed {} (stationary {:?}, late turn {:.2}°)",
                    rigs[*i].name,
                    n % size.still_seeds,
                    r.stationary_frame,
                    r.late_turn_deg
                )
            })
            .collect();
        if !worst.is_empty() {
            eprintln!("    not settled, first: {}", worst.join("; "));
        }
        // The runs that miss the figures without failing `settled`: stationary after
        // frame SETTLE_FRAMES (moved at it), others moved by an infeasible hand.
        let late: Vec<String> = runs
            .iter()
            .enumerate()
            .filter(|(_, (_, r))| {
                r.stationary_frame.is_none_or(|f| f > SETTLE_FRAMES) || r.others_error > UNTOUCHED
            })
            .take(6)
            .map(|(n, (i, r))| {
                format!(
                    "{} seed {} (stationary {:?}, late turn {:.2}°, others {:.2})",
                    rigs[*i].name,
                    n % size.still_seeds,
                    r.stationary_frame,
                    r.late_turn_deg,
                    r.others_error
                )
            })
            .collect();
        if !late.is_empty() {
            eprintln!("    late or others moved, first: {}", late.join("; "));
        }
    }
}

/// The moving sequences' input poses and goals, folded in order (equal on two builds given the
/// same goals).
fn goal_hash(seqs: &[Moving]) -> u64 {
    combined(seqs.iter().map(|m| {
        let mut h = OutputHash::default();
        h.frames(&m.frames);
        h
    }))
}

/// The oracle's feasible goals of the moving sequences, folded in order.
fn feasible_hash(seqs: &[Moving]) -> u64 {
    combined(seqs.iter().map(|m| {
        let mut h = OutputHash::default();
        h.debug(&m.feasible);
        h
    }))
}

fn moving(rigs: &[Rig], cc0_from: usize, size: Size) {
    let seqs = moving_sequences(rigs, cc0_from, size);
    let runs = par_map(&seqs, |m| run_moving(&rigs[m.rig], m));
    let s = summarize_moving(&runs);
    // Timed one at a time.
    let mut times = Vec::new();
    for m in &seqs {
        times.extend(time_moving(&rigs[m.rig], m));
    }
    let (median, p99, max) = stats(times);
    eprintln!(
        "\nmoving 6D gameplay goals: {} sequences × {} frames (uneven ground, look-around ±150°, hands 6D at 95–105 % of the arm and up to {:.0} % beyond)",
        seqs.len(),
        size.moving_frames,
        EXCURSION * 100.0
    );
    eprintln!(
        "  joint turns > {FLIP_DEG}°: {} (issue: 0), largest {:.1}°; > {TURN_BOUND_DEG}°: {}",
        s.flips, s.largest_turn_deg, s.over_bound
    );
    eprintln!(
        "  feasible goal-frames met: {:.2} % ({} of {}; issue: {FEASIBLE_MET_PERCENT} %), worst miss {:.1} mm|°; {} more the oracle meets only beyond {TURN_BOUND_DEG}° left out",
        s.met_percent(),
        s.met,
        s.oracle_feasible - s.beyond_bound,
        s.worst_miss,
        s.beyond_bound
    );
    eprintln!(
        "  other goals next to an infeasible one: worst {:.2} mm|° over {} frames (issue: ≤ {UNTOUCHED})",
        s.others_error, s.infeasible_frames
    );
    eprintln!(
        "  output hash (every pose and report, in order): {:016x}; goal hash (every input pose and goal set): {:016x}; oracle's feasible-goal hash: {:016x}",
        combined(runs.iter().map(|r| r.output_hash)),
        goal_hash(&seqs),
        feasible_hash(&seqs)
    );
    eprintln!(
        "  warm solve, fastest of {REPEATS}: median {median:.1} µs, p99 {p99:.1} µs (issue: ≤ {WARM_P99_US}), max {max:.1} µs (issue: ≤ {WARM_MAX_US}); solver errors / non-finite {}",
        s.failures
    );
}

/// `IK_ROBUSTNESS_ONLY=warm`: the moving sequences' solves alone, once, untimed and without
/// the oracle (the frames `moving` times; the same outputs, so the same output hash): what to
/// profile the warm solve on (`valgrind --tool=callgrind`).
fn warm(rigs: &[Rig], cc0_from: usize, size: Size) {
    let mut hashes = Vec::new();
    let mut solves = 0;
    for (r, rig) in rigs.iter().enumerate() {
        if !(size.moving_all_rigs || sampled(r, cc0_from)) {
            continue;
        }
        for k in 0..size.moving_seeds {
            let frames = moving_frames(rig, size.moving_frames, (r * 7 + k + 1) as u32);
            let feasible = vec![GoalMask::default(); frames.len()];
            let mut solver = measured_solver(rig);
            let run = gameplay::run(rig, &mut solver, &frames, &feasible, false, track);
            solves += run.frames;
            hashes.push(run.output_hash);
        }
    }
    eprintln!(
        "\nwarm solves of the moving sequences (untimed, no oracle): {solves} solves (the first of each sequence cold); output hash {:016x}",
        combined(hashes.into_iter())
    );
}

fn vr(rigs: &[Rig], cc0_from: usize, size: Size) {
    let runs = vr_runs(rigs, cc0_from, size);
    let n = runs.len();
    let rested = runs
        .iter()
        .filter(|(_, r)| r.settle_frames.is_some_and(|f| f <= SETTLE_FRAMES))
        .count();
    let max = |f: &dyn Fn(&VrRun) -> f32| runs.iter().map(|(_, r)| f(r)).fold(0.0f32, f32::max);
    let sum = |f: &dyn Fn(&VrRun) -> usize| runs.iter().map(|(_, r)| f(r)).sum::<usize>();
    let mut by_phase = [0usize; 7];
    let mut drift_phases = [0usize; 7];
    for (_, r) in &runs {
        for (a, b) in by_phase.iter_mut().zip(r.flips_by_phase) {
            *a += b;
        }
        if let Some(p) = r.drift_phase
            && r.planted_drift > PLANTED_DRIFT
        {
            drift_phases[p as usize] += 1;
        }
    }
    // Timed: the first script of every rig, one at a time.
    let mut times = Vec::new();
    // The same frames by the script's phase (where the slow frames are).
    let mut phase_times: [Vec<f64>; 7] = Default::default();
    for (i, rig) in rigs.iter().enumerate() {
        if !(size.vr_all_rigs || sampled(i, cc0_from)) {
            continue;
        }
        let body = VrBody::new(&rig.skeleton, &rig.map).expect("rig maps");
        let script = vr_script(&body, rig, seed_of(i, 0, SALT_VR));
        let fastest = run_vr(rig, &script, true).fastest_us;
        for (f, &t) in script.iter().zip(&fastest) {
            phase_times[f.phase as usize].push(t);
        }
        times.extend(fastest);
    }
    let total = times.len().max(1);
    let (median, p99, tmax) = stats(times);
    eprintln!(
        "\nVR body: {n} scripts of {} frames at {VR_HZ} Hz (stand, walk 1.2 m/s, turn 180°, crouch 40 %, hand 30 % beyond reach, head shake ±60° at 2 Hz, {VR_STILL_SECONDS} s still)",
        runs.first().map_or(0, |(_, r)| r.frames)
    );
    eprintln!(
        "  at rest within {SETTLE_FRAMES} frames of the trackers stopping (bit-identical): {rested} of {n} (issue: all); {} still changing in the last frame, the others bit-identical after at most {:?} frames",
        runs.iter()
            .filter(|(_, r)| r.settle_frames.is_none())
            .count(),
        runs.iter().filter_map(|(_, r)| r.settle_frames).max()
    );
    eprintln!(
        "  joint turns > {FLIP_DEG}°: {} (issue: 0), largest {:.1}°; by phase {:?}: {by_phase:?}",
        sum(&|r| r.flips),
        max(&|r| r.max_turn_deg),
        VrPhase::ALL
    );
    eprintln!(
        "  planted-foot drift: worst {:.3} mm (issue: ≤ 1), runs over 1 mm by phase of the worst drift {drift_phases:?}",
        max(&|r| r.planted_drift) * 1e3
    );
    eprintln!(
        "  frames outside limits ({LIMIT_TOLERANCE} rad): {} in {} runs (issue: 0)",
        sum(&|r| r.outside_limits),
        runs.iter().filter(|(_, r)| r.outside_limits > 0).count()
    );
    eprintln!(
        "  head error when reachable: worst {:.3} mm (issue: ≤ 1), {} of {} frames reachable; failures {}",
        max(&|r| r.head_error) * 1e3,
        sum(&|r| r.head_frames),
        sum(&|r| r.frames),
        sum(&|r| r.failures)
    );
    eprintln!(
        "  output hash (every pose, in order): {:016x}; goal hash (every script's trackers): {:016x}",
        combined(runs.iter().map(|(_, r)| r.output_hash)),
        combined(runs.iter().map(|(_, r)| r.goal_hash))
    );
    eprintln!(
        "  per frame, fastest of {REPEATS} passes: median {median:.1} µs, p99 {p99:.1} µs (issue: ≤ {VR_P99_US}), max {tmax:.1} µs"
    );
    for (phase, t) in VrPhase::ALL.iter().zip(phase_times) {
        let over = t.iter().filter(|&&us| us > VR_P99_US).count();
        let (pm, pp, px) = stats(t);
        eprintln!(
            "    {phase:?}: median {pm:.1} µs, p99 {pp:.1} µs, max {px:.1} µs; frames over {VR_P99_US} µs: {over} ({:.2} % of all frames)",
            over as f64 * 100.0 / total as f64
        );
    }
    for (i, r) in &runs {
        eprintln!(
            "    {:<24} rest {:?} | flips {} ({:.1}°) | drift {:.1} mm ({:?}) | outside limits {} | head {:.2} mm",
            rigs[*i].name,
            r.settle_frames,
            r.flips,
            r.max_turn_deg,
            r.planted_drift * 1e3,
            r.drift_phase,
            r.outside_limits,
            r.head_error * 1e3
        );
    }
}

fn cold(rigs: &[Rig], cc0_from: usize, size: Size) {
    eprintln!(
        "\ncold: solve_cold from the rest pose, goals by FK of random in-limit poses, {} per CC0 character, fastest of {REPEATS}",
        size.cold_per_rig
    );
    let (mut ok, mut total, mut all, mut hashes) = (0, 0, Vec::new(), Vec::new());
    for (i, rig) in rigs.iter().enumerate().skip(cc0_from) {
        let r = run_cold(rig, size.cold_per_rig, seed_of(i, 0, SALT_COLD), true);
        let (median, p99, max) = stats(r.fastest_us.clone());
        eprintln!(
            "  {:<24} met {:>4} of {:>4} ({:>5.1} %) | median {median:>6.1} µs p99 {p99:>7.1} µs max {max:>7.1} µs",
            rig.name,
            r.success,
            r.total,
            r.success as f64 * 100.0 / r.total.max(1) as f64
        );
        ok += r.success;
        hashes.push(r.goal_hash);
        total += r.total;
        all.extend(r.fastest_us);
    }
    let (median, p99, _) = stats(all);
    eprintln!(
        "  goal hash (every goal set): {:016x}",
        combined(hashes.into_iter())
    );
    eprintln!(
        "  all: met {ok} of {total} ({:.2} %; issue: ≥ {:.1} %), median {median:.1} µs (issue: ≤ {COLD_MEDIAN_US}), p99 {p99:.1} µs",
        ok as f64 * 100.0 / total.max(1) as f64,
        COLD_SUCCESS * 100.0
    );
}

/// `IK_STILL_TRACE=HandBeyond,Mixamo/Identity,35[,frames]` (a still kind, a rig's name, the
/// seed's index within the rig as the still table's lists print it, optionally the frames,
/// 40 by default): one still run, frame by frame — iterations, the largest joint turn, the
/// goals giving way, and every effector's and the look-at's error by FK (mm of a 0.9 m leg,
/// degrees). Then nothing else runs.
fn trace_still(rigs: &[Rig], t: &str) {
    let parts: Vec<&str> = t.split(',').collect();
    let kind = StillKind::ALL
        .into_iter()
        .find(|k| format!("{k:?}") == parts[0])
        .expect("kind");
    let r = rigs.iter().position(|r| r.name == parts[1]).expect("rig");
    let k: usize = parts[2].parse().expect("seed");
    let frames: usize = parts.get(3).map_or(40, |f| f.parse().expect("frames"));
    let rig = &rigs[r];
    let case = still_case(rig, &Body::of(rig), kind, seed_of(r, k, SALT_STILL));
    eprintln!(
        "infeasible {:?} hand_rotation {} scale {}",
        case.infeasible_hand, case.hand_rotation, rig.scale
    );
    let mut solver = measured_solver(rig);
    let mut pose = case.start.clone();
    let mut prev = pose.clone();
    for f in 0..frames {
        prev.copy_from(&pose);
        let rep = solver
            .solve(&rig.skeleton, &mut pose, &case.goals)
            .expect("ok");
        let m = measure(rig, &solver, &pose, &case.goals);
        let err: Vec<String> = (0..5)
            .map(|e| {
                format!(
                    "{:.2}mm/{:.2}°",
                    m.residuals[e].position / rig.scale * 1000.0,
                    m.residuals[e].rotation.to_degrees()
                )
            })
            .collect();
        eprintln!(
            "f{f:3} it {} turn {:.3}° gw {:?} look {:.2}° err [{}]",
            rep.iterations,
            turn_deg(&prev, &pose),
            rep.giving_way.map(u8::from),
            m.look_at.to_degrees(),
            err.join(" ")
        );
    }
}

fn bench(c: &mut Criterion) {
    let size = if std::env::var("IK_ROBUSTNESS_SIZE").is_ok_and(|v| v == "ci") {
        Size::CI
    } else {
        Size::FULL
    };
    let only = std::env::var("IK_ROBUSTNESS_ONLY").ok();
    let run = |what: &str| only.as_deref().is_none_or(|o| o == what);
    let mut rigs = convention_rigs();
    let cc0_from = rigs.len();
    rigs.extend(cc0_rigs());
    eprintln!(
        "robustness: {} rigs ({}), {} threads for the measuring passes",
        rigs.len(),
        rigs.iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    );
    if let Ok(t) = std::env::var("IK_STILL_TRACE") {
        trace_still(&rigs, &t);
        return;
    }
    if run("still") {
        still(&rigs, size);
    }
    if run("moving") {
        moving(&rigs, cc0_from, size);
    }
    if only.as_deref() == Some("warm") {
        warm(&rigs, cc0_from, size);
    }
    if run("vr") {
        vr(&rigs, cc0_from, size);
    }
    if run("cold") {
        cold(&rigs, cc0_from, size);
    }
    let rig = rigs
        .iter()
        .find(|r| r.name == "Mixamo/PlusY")
        .expect("Mixamo test rig");
    let case = still_case(rig, &Body::of(rig), StillKind::HandBeyond, 1);
    c.bench_function("robustness/still_hand_beyond/120_frames", |b| {
        b.iter(|| black_box(run_still(rig, black_box(&case), 120)));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
