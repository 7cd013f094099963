//! Crowd benchmark: N humanoids in a headless `App` (`MinimalPlugins` + `TransformPlugin` +
//! `IkPlugin`), every hand, foot, pelvis and head target moving every frame; one `app.update()`
//! per iteration (gather, solve in parallel, write back, propagate). Full-body humanoids
//! (`IkHumanoid::auto()`: ik-core's hybrid full-body solver) are compared with four analytic
//! limbs per character (`IkHumanoid::limbs()`) in the same run, and the ratio printed.
//!
//! Motion model: the targets follow a procedural walk cycle as an animation would drive them.
//! A one-second (60-frame) cycle of joint angles (arms hanging and swinging ±25°, elbows
//! bending 15–45°, hips flexing ±25°, knees 5–45°, the pelvis bobbing 2 cm, swaying 2 cm and
//! turning ±5°, the head turning ±10°) is turned by forward kinematics into each frame's hand,
//! foot and pelvis positions and orientations and the look-at point, all in the character's
//! frame; every pose is checked to be within the solver's anatomical limits, so every goal is
//! reachable. Each character walks the cycle at its own phase; the hands move up to about
//! 3 cm, the feet up to about 4 cm per frame (walking speed at 60 fps), and every target moves
//! every frame. Each frame's solve starts from the previous frame's solution (the bones keep
//! the solved pose), as it does in a game where IK follows an animation.
//!
//! Environment knobs: `IK_CROWD` (characters, default 1000), `IK_SPACING` (metres between
//! characters), `IK_HEAD=0` (no look-at), `IK_TOL` (position tolerance), `IK_RESTARTS`,
//! `IK_ITERS`, `IK_POSTURE`, `IK_STILL` (targets do not move), `IK_BASELINE` (IK disabled:
//! the cost of everything else), `IK_DEFAULT_POOLS` (Bevy's default task pools: one compute
//! thread on 2 cores), `IK_WAVES` (the earlier motion model, see `move_waves`: T-pose hand
//! orientations on moved hands, limit-bound wrists), `IK_GAMEPLAY` (gameplay goals on top of the
//! walk, see `move_gameplay`; with `IK_GAMEPLAY_HANDS_6D` the reaching hands keep the walk
//! cycle's orientation goals: harder than ik-core's scenario), `IK_DEBUG`, `IK_MEASURE_SECS`
//! (criterion's measurement time per mode, default 8), `IK_BATCHED` (adds the four-limb crowd forced one way and the other:
//! `limbs_one_by_one` with `IkPlugin::with_batched_limbs(false)`, `limbs_batched` with
//! `true`, each character's four limbs in one `LimbBatch` call; the `limbs` mode is the
//! plugin's default rule, batched from 16 characters on; and `limbs_stage`: each character's
//! four `IkLimb`s turned into one `IkLimbBatch` stage, ik-core's `LimbBatchStage`),
//! `IK_CPU` (print the CPU time per frame, every thread, over 120 frames: on a shared, loaded
//! machine wall time includes waiting for a core), `IK_PHASES` (print the median time of each phase of
//! the frame: `Update`, the plugin's `Prepare`, `Solve` and `Writeback` sets, transform
//! propagation; timing systems between the sets, so the frame is a little slower), `IK_MODES`
//! (a comma-separated list of the modes to run, e.g. `limbs,limbs_batched`: instruction counts
//! of one mode without the others), `IK_TASK_TIMES` (each character's own task time, see
//! `print_task_times`: quantiles that a loaded machine does not move much), `IK_FRAMES` (no
//! criterion: build each mode's crowd and run this many frames, then print a hash of every
//! `Transform`, for instruction counts and to compare two builds' output — the
//! difference between two counts, e.g. `IK_FRAMES=0` and `IK_FRAMES=100` under callgrind, over
//! the frames, is one frame's).

use std::hint::black_box;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::transform::TransformSystems;
use bevy_ik::ik_core::humanoid::Effector;
use bevy_ik::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};

// The 21-bone humanoid's (parent index, T-pose model position) table, shared with the tests.
#[path = "../tests/integration/common/mod.rs"]
mod common;
use common::POSITIONS;

// The walk cycle and its targets, shared with `grounding_crowd.rs`.
#[path = "walk/mod.rs"]
mod walk;
use walk::{
    CYCLE, Frame, Track, WalkCycle, compute_on_every_core, median_frame, move_targets, spawn_bones,
    walk_cycle, walk_targets,
};

/// A small deterministic generator (seeded; the same crowd every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// `IK_WAVES`: the earlier, harder motion model. A target's wave centre, phase and amplitude.
#[derive(Component)]
struct Wave {
    base: Vec3,
    phase: f32,
    amplitude: f32,
}

/// `IK_WAVES`: hands (8 cm), feet (4 cm) and pelvis (2 cm) on sine waves around centres moved
/// from the T-pose (hands 25 cm inward, 20 cm down, 15 cm forward), with their orientations
/// kept at the T-pose: the wrists are then limit-bound, so the hand orientation goals are often
/// not reachable exactly and the solver iterates.
fn move_waves(frame: Res<Frame>, mut targets: Query<(&Wave, &mut Transform)>) {
    let t = frame.0 as f32 * 0.05;
    targets.par_iter_mut().for_each(|(w, mut tr)| {
        let s = (t + w.phase).sin() * w.amplitude;
        let c = (t * 0.7 + w.phase).cos() * w.amplitude;
        tr.translation = w.base + Vec3::new(c * 0.5, s, c);
    });
}

/// `IK_GAMEPLAY`: a character's seed for its gameplay goals (its index in the crowd).
#[derive(Component)]
struct Seed(u32);

// ik-core's gameplay scenarios' goal motion (the same file its tests and bench use).
#[path = "../../ik-core/tests/support/gameplay_motion.rs"]
mod gameplay_motion;
use gameplay_motion::{look_offset, reach_offset, uneven_foot};

/// The bench rig's leg length over 0.9 m: model units per "human metre" (as ik-core's
/// `gameplay` support scales its motion).
fn rig_scale() -> f32 {
    let p = |i: usize| Vec3::from(POSITIONS[i].1);
    (p(13).distance(p(14)) + p(14).distance(p(15))) / 0.9
}

/// `IK_GAMEPLAY`: ik-core's `gameplay` scenario "both" (`tests/support/gameplay.rs`) on top of
/// the walk cycle, each character with its own seed: each foot raised or lowered up to ±12 cm
/// and turned to a slope of up to 20°, the pelvis lowered with the lower foot; each hand
/// reaching (position only: the hands' orientation goals are switched off on the full-body
/// stage) for a point that drifts from 30 % to 125 % of the arm's length from the walk pose's
/// upper arm, in directions up to 46° to the side and ±29° up and down of forward; the
/// look-at target swung up to 150° to either side and ±30° up and down, 2 m from the walk
/// pose's head. The body frame of the bench rig: left +X, up +Y, forward +Z.
fn move_gameplay(
    frame: Res<Frame>,
    cycle: Res<WalkCycle>,
    mut targets: Query<(&Track, &Seed, &mut Transform)>,
) {
    let t = frame.0 as f32 / 60.0;
    let s = rig_scale();
    let p = |i: usize| Vec3::from(POSITIONS[i].1);
    let arm = p(6).distance(p(7)) + p(7).distance(p(8));
    let (left, up, forward) = (Vec3::X, Vec3::Y, Vec3::Z);
    let axes = (left, up, forward);
    let lift = |seed: u32, k: u32| uneven_foot(t, seed, k, left, forward, s).0;
    targets
        .par_iter_mut()
        .for_each(|(track, &Seed(seed), mut tr)| {
            let anchors = cycle.anchors(frame.0 + track.phase);
            match track.slot {
                2 | 3 => {
                    let k = track.slot as u32 - 2;
                    let (h, slope) = uneven_foot(t, seed, k, left, forward, s);
                    tr.translation += up * h;
                    tr.rotation = (slope * tr.rotation).normalize();
                }
                4 => tr.translation += up * lift(seed, 0).min(lift(seed, 1)).min(0.0),
                0 | 1 => {
                    let k = track.slot as u32;
                    tr.translation = anchors[k as usize] + reach_offset(t, seed, k, axes, arm);
                }
                5 => tr.translation = anchors[2] + look_offset(t, seed, axes, s),
                _ => {}
            }
        });
}

/// `IK_GAMEPLAY`: the hands reach with position-only goals (as in ik-core's scenario): their
/// orientation goals are switched off on every full-body stage (the gather writes targets,
/// not weights, so this holds until a set-up rebuilds the stage).
fn hands_position_only(app: &mut App) {
    let mut q = app.world_mut().query::<&mut IkCharacter>();
    for mut character in q.iter_mut(app.world_mut()) {
        let Some(stack) = character.stack_mut() else {
            continue;
        };
        for slot in stack.slots_mut() {
            if let Some(fb) = slot.stage.as_full_body_mut() {
                for hand in [Effector::LeftHand, Effector::RightHand] {
                    fb.goals.get_mut(hand).rotation_weight = 0.0;
                }
            }
        }
    }
}

fn spawn_character(world: &mut World, at: Vec3, humanoid: IkHumanoid) {
    let root = world
        .spawn((Transform::from_translation(at), humanoid))
        .id();
    spawn_bones(world, root);
}

/// `limbs_stage`: each humanoid's four `IkLimb` stages (set up by the first frame) become one
/// `IkLimbBatch` stage on the first limb's entity, the same limbs, targets and poles (one
/// status per character instead of four).
fn limbs_into_one_stage(app: &mut App) {
    let mut q = app.world_mut().query::<&IkHumanoidTargets>();
    let sets: Vec<Vec<Entity>> = q.iter(app.world()).map(|t| t.limbs.clone()).collect();
    for limbs in sets {
        let world = app.world_mut();
        let batch = IkLimbBatch::new(
            limbs
                .iter()
                .filter_map(|&e| world.get::<IkLimb>(e).cloned()),
        );
        // The first limb's entity hosts the stage (in the limbs' place in the stage order);
        // the others go, with their statuses.
        world.entity_mut(limbs[0]).remove::<IkLimb>().insert(batch);
        for &e in &limbs[1..] {
            world.entity_mut(e).despawn();
        }
    }
    app.update();
}

fn crowd(n: usize, humanoid: &IkHumanoid, batched: Option<bool>) -> App {
    let mut app = App::new();
    // Bevy's default task pools give IO and async compute one thread each before compute
    // gets the rest: on this 2-core machine that leaves compute (systems and `par_iter_mut`)
    // one thread. A game that wants every core for its systems gives compute all of them (the
    // IO and async threads sleep when idle); `IK_DEFAULT_POOLS` keeps Bevy's defaults.
    let pools = if std::env::var("IK_DEFAULT_POOLS").is_err() {
        compute_on_every_core()
    } else {
        TaskPoolOptions::default()
    };
    app.add_plugins((
        MinimalPlugins.set(TaskPoolPlugin {
            task_pool_options: pools,
        }),
        TransformPlugin,
        match batched {
            Some(on) => IkPlugin::default().with_batched_limbs(on),
            None => IkPlugin::default(),
        },
    ))
    .init_resource::<Frame>()
    .insert_resource(walk_cycle())
    .add_systems(Update, move_targets);
    let side = (n as f32).sqrt().ceil() as usize;
    for i in 0..n {
        let spacing = std::env::var("IK_SPACING")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.0);
        let at = Vec3::new(
            (i % side) as f32 * spacing,
            0.0,
            (i / side) as f32 * spacing,
        );
        spawn_character(app.world_mut(), at, humanoid.clone());
    }
    app.update();
    // Every character walks the cycle at its own phase.
    let mut rng = Lcg(0x5eed);
    let mut q = app.world_mut().query::<&IkHumanoidTargets>();
    let targets: Vec<IkHumanoidTargets> = q.iter(app.world()).cloned().collect();
    assert_eq!(targets.len(), n, "every character was mapped");
    let waves = std::env::var("IK_WAVES").is_ok();
    if waves {
        app.add_systems(Update, move_waves.after(move_targets));
    }
    if std::env::var("IK_GAMEPLAY").is_ok() {
        app.add_systems(Update, move_gameplay.after(move_targets));
    }
    for (index, t) in targets.into_iter().enumerate() {
        if waves {
            for (e, offset, amplitude) in [
                (t.left_hand, Vec3::new(-0.25, -0.2, 0.15), 0.08),
                (t.right_hand, Vec3::new(0.25, -0.2, 0.15), 0.08),
                (t.left_foot, Vec3::new(0.0, 0.1, 0.05), 0.04),
                (t.right_foot, Vec3::new(0.0, 0.1, 0.05), 0.04),
                (t.pelvis, Vec3::new(0.0, -0.05, 0.0), 0.02),
            ] {
                let Some(e) = e else { continue };
                let base = app.world().get::<Transform>(e).unwrap().translation + offset;
                let phase = rng.next() * std::f32::consts::TAU;
                app.world_mut().entity_mut(e).insert(Wave {
                    base,
                    phase,
                    amplitude,
                });
            }
            continue;
        }
        let phase = (rng.next() * CYCLE as f32) as usize;
        for (slot, e) in walk_targets(&t) {
            app.world_mut()
                .entity_mut(e)
                .insert((Track { slot, phase }, Seed(index as u32 + 1)));
        }
    }
    app.update();
    if std::env::var("IK_GAMEPLAY").is_ok() && std::env::var("IK_GAMEPLAY_HANDS_6D").is_err() {
        hands_position_only(&mut app);
    }
    if std::env::var("IK_PHASES").is_ok() {
        time_phases(&mut app);
    }
    if std::env::var("IK_BASELINE").is_ok() {
        // Everything but the solve: IK disabled on every character.
        let mut q = app.world_mut().query_filtered::<Entity, With<IkStatus>>();
        let all: Vec<Entity> = q.iter(app.world()).collect();
        for e in all {
            app.world_mut().entity_mut(e).insert(IkDisabled);
        }
    }
    app
}

/// `IK_FRAMES`: a hash of every entity's `Transform` (translation and rotation bits, in query
/// order: the same crowd every run), so two builds can be shown to pose the crowd identically.
fn pose_hash(app: &mut App) -> u64 {
    let mut q = app.world_mut().query::<(Entity, &Transform)>();
    let mut items: Vec<(Entity, [u32; 7])> = q
        .iter(app.world())
        .map(|(e, t)| {
            let (v, r) = (t.translation, t.rotation);
            (e, [v.x, v.y, v.z, r.x, r.y, r.z, r.w].map(f32::to_bits))
        })
        .collect();
    items.sort_unstable_by_key(|(e, _)| e.to_bits());
    // FNV-1a over the bits.
    items
        .iter()
        .flat_map(|(_, bits)| bits.iter())
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// `IK_PHASES`: when the last phase boundary was passed, and each frame's phase times.
#[derive(Resource, Default)]
struct Phases {
    last: Option<Instant>,
    current: [Duration; PHASES.len()],
    frames: Vec<[Duration; PHASES.len()]>,
}

/// The phases `IK_PHASES` times, each from the previous boundary to its end.
const PHASES: [&str; 5] = ["update", "prepare", "solve", "writeback", "propagate"];

/// Ends phase `P` (the first boundary, in `First`, starts the frame).
fn phase_boundary<const P: usize>(mut phases: ResMut<Phases>) {
    let now = Instant::now();
    if P == 0 {
        phases.current = [Duration::ZERO; PHASES.len()];
    } else if let Some(last) = phases.last {
        phases.current[P - 1] = now - last;
        if P == PHASES.len() {
            let frame = phases.current;
            phases.frames.push(frame);
        }
    }
    phases.last = Some(now);
}

/// Adds the `IK_PHASES` timing systems.
fn time_phases(app: &mut App) {
    app.init_resource::<Phases>()
        .add_systems(First, phase_boundary::<0>)
        .add_systems(
            PostUpdate,
            (
                phase_boundary::<1>.before(IkSystems::Prepare),
                phase_boundary::<2>
                    .after(IkSystems::Prepare)
                    .before(IkSystems::Solve),
                phase_boundary::<3>
                    .after(IkSystems::Solve)
                    .before(IkSystems::Writeback),
                phase_boundary::<4>
                    .after(IkSystems::Writeback)
                    .before(TransformSystems::Propagate),
                phase_boundary::<5>.after(TransformSystems::Propagate),
            ),
        );
}

/// Prints the median of each phase over the frames timed since the last call.
fn print_phases(app: &mut App, label: &str) {
    let Some(mut phases) = app.world_mut().get_resource_mut::<Phases>() else {
        return;
    };
    let frames = core::mem::take(&mut phases.frames);
    if frames.is_empty() {
        return;
    }
    let line: Vec<String> = PHASES
        .iter()
        .enumerate()
        .map(|(p, name)| {
            let mut t: Vec<Duration> = frames.iter().map(|f| f[p]).collect();
            t.sort();
            format!("{name} {:.3}", t[t.len() / 2].as_secs_f64() * 1e3)
        })
        .collect();
    println!(
        "phases {label} (ms, medians of {} frames): {}",
        frames.len(),
        line.join(", ")
    );
}

/// CPU time of this process so far (every thread's time on a CPU, from Linux's
/// `/proc/self/task/*/schedstat`, nanoseconds); `None` elsewhere.
fn cpu_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// `IK_CPU`: CPU time per frame over `frames` frames (every thread: the figure a loaded,
/// shared machine inflates least — wall time there includes waiting for a core).
fn cpu_per_frame(app: &mut App, frames: u32) -> Option<Duration> {
    let start = cpu_ns()?;
    for _ in 0..frames {
        app.update();
    }
    Some(Duration::from_nanos(cpu_ns()? - start) / frames)
}

/// `IK_TASK_TIMES`: each character's own task time ([`IkSolveTime`]: gather, solve, choosing
/// the bones to write), over 60 frames — quantiles over every character and frame. Robust to a
/// loaded machine in a way frame times are not: a task preempted by another process is one
/// sample of 60,000, not the frame's time.
fn print_task_times(app: &mut App, label: &str) {
    let characters: Vec<Entity> = app
        .world_mut()
        .query_filtered::<Entity, (With<IkCharacter>, Without<IkStageOf>)>()
        .iter(app.world())
        .collect();
    for &e in &characters {
        app.world_mut().entity_mut(e).insert(IkSolveTime::default());
    }
    for _ in 0..3 {
        app.update();
    }
    let mut times = Vec::with_capacity(characters.len() * 60);
    for _ in 0..60 {
        app.update();
        let mut q = app.world_mut().query::<&IkSolveTime>();
        times.extend(q.iter(app.world()).map(|t| t.last.as_nanos() as u64));
    }
    for &e in &characters {
        app.world_mut().entity_mut(e).remove::<IkSolveTime>();
    }
    times.sort_unstable();
    let q = |p: f64| times[((times.len() - 1) as f64 * p) as usize];
    println!(
        "task {label}: per character and frame p10 {} ns, median {} ns, p90 {} ns ({} samples)",
        q(0.1),
        q(0.5),
        q(0.9),
        times.len()
    );
}

fn bench_crowd(c: &mut Criterion) {
    let n: usize = std::env::var("IK_CROWD")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let env = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<f32>().ok());
    let mut full_body = IkHumanoid::auto();
    if let Some(v) = env("IK_ITERS") {
        full_body.full_body_settings.max_iterations = v as u32;
    }
    if let Some(v) = env("IK_TOL") {
        full_body.full_body_settings.position_tolerance = v;
        full_body.full_body_settings.rotation_tolerance = v * 10.0;
    }
    if let Some(v) = env("IK_RESTARTS") {
        full_body.full_body_settings.max_restarts = v as u32;
    }
    if let Some(v) = env("IK_HEAD") {
        full_body.head = v > 0.0;
    }
    if let Some(v) = env("IK_POSTURE") {
        full_body.full_body_settings.posture_gain = v;
    }
    let mut modes = vec![
        ("full_body", full_body, None),
        ("limbs", IkHumanoid::limbs(), None),
    ];
    let forced = [
        ("limbs_one_by_one", IkHumanoid::limbs(), Some(false)),
        ("limbs_batched", IkHumanoid::limbs(), Some(true)),
        ("limbs_stage", IkHumanoid::limbs(), Some(false)),
    ];
    let only = std::env::var("IK_MODES").ok();
    let only: Option<Vec<&str>> = only
        .as_deref()
        .map(|s| s.split(',').map(str::trim).collect());
    for mode in forced {
        if std::env::var("IK_BATCHED").is_ok() || only.as_ref().is_some_and(|o| o.contains(&mode.0))
        {
            modes.push(mode);
        }
    }
    if let Some(only) = &only {
        modes.retain(|m| only.contains(&m.0));
    }
    let mut group = c.benchmark_group("crowd");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs_f32(
        env("IK_MEASURE_SECS").unwrap_or(8.0),
    ));
    let mut medians = Vec::new();
    for (label, humanoid, batched) in &modes {
        let mut app = crowd(n, humanoid, *batched);
        if *label == "limbs_stage" {
            limbs_into_one_stage(&mut app);
        }
        if let Some(frames) = env("IK_FRAMES") {
            for _ in 0..frames as u32 {
                app.update();
            }
            println!(
                "frames {label}/{n}: {frames}, pose hash {:016x}",
                pose_hash(&mut app)
            );
            continue;
        }
        group.bench_function(format!("{label}/{n}"), |b| {
            b.iter(|| {
                app.update();
                black_box(app.world().entities().len())
            });
        });
        if let Some(mut phases) = app.world_mut().get_resource_mut::<Phases>() {
            phases.frames.clear();
        }
        medians.push((label, median_frame(&mut app, 30)));
        print_phases(&mut app, &format!("{label}/{n}"));
        if std::env::var("IK_CPU").is_ok()
            && let Some(cpu) = cpu_per_frame(&mut app, 120)
        {
            println!(
                "cpu {label}/{n}: {:.3} ms of CPU per frame (all threads, 120 frames)",
                cpu.as_secs_f64() * 1e3
            );
        }
        if std::env::var("IK_TASK_TIMES").is_ok() {
            print_task_times(&mut app, &format!("{label}/{n}"));
        }
        // Report how well the crowd is tracking.
        let mut q = app.world_mut().query::<&IkStatus>();
        let (mut solved, mut converged, mut iterations, mut worst) = (0usize, 0usize, 0u32, 0f32);
        if std::env::var("IK_DEBUG").is_ok() {
            for s in q
                .iter(app.world())
                .filter(|s| s.position_residual > 1e-3)
                .take(5)
            {
                println!(
                    "{:?} it {} res {:?}",
                    s.converged, s.iterations, s.residuals
                );
            }
        }
        for s in q.iter(app.world()) {
            if s.solved {
                solved += 1;
                converged += usize::from(s.converged);
                iterations += s.iterations;
                worst = worst.max(s.position_residual);
            }
        }
        println!(
            "crowd {label}/{n}: {solved} solved, {converged} converged, mean iterations {:.1}, \
             worst position residual {worst:.2e}",
            iterations as f32 / solved.max(1) as f32
        );
    }
    group.finish();
    let median = |label: &str| medians.iter().find(|m| *m.0 == label).map(|m| m.1);
    let (full, limbs) = (median("full_body"), median("limbs"));
    if let (Some(full), Some(limbs)) = (full, limbs) {
        println!(
            "crowd of {n}: full body {:.2} ms/frame, four analytic limbs {:.2} ms/frame (ratio {:.2}); budget 16.7 ms",
            full.as_secs_f64() * 1e3,
            limbs.as_secs_f64() * 1e3,
            full.as_secs_f64() / limbs.as_secs_f64()
        );
    }
    if let (Some(stage), Some(batched)) = (median("limbs_stage"), median("limbs_batched")) {
        println!(
            "crowd of {n}: four analytic limbs as one IkLimbBatch stage {:.2} ms/frame, the \
             plugin's LimbBatch {:.2} ms/frame (ratio {:.2})",
            stage.as_secs_f64() * 1e3,
            batched.as_secs_f64() * 1e3,
            stage.as_secs_f64() / batched.as_secs_f64()
        );
    }
    if let (Some(limbs), Some(batched)) = (median("limbs_one_by_one"), median("limbs_batched")) {
        println!(
            "crowd of {n}: four analytic limbs one by one {:.2} ms/frame, batched {:.2} ms/frame \
             (ratio {:.2})",
            limbs.as_secs_f64() * 1e3,
            batched.as_secs_f64() * 1e3,
            limbs.as_secs_f64() / batched.as_secs_f64()
        );
    }
}

criterion_group!(benches, bench_crowd);
criterion_main!(benches);
