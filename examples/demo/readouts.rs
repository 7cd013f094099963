//! What the solver did: the solve time, each goal's residual and its history (the panel's
//! plots), and the run's [`RunSummary`], printed as one `IK_SUMMARY {json}` line at exit.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bevy::prelude::*;
use bevy_egui::egui;
use bevy_ik::prelude::*;
use egui_plot::{Legend, Line, Plot, PlotPoints};
use serde::Serialize;

use crate::character::{Character, CharacterAsset, CharacterSpawns, MappingSummary};
use crate::handles::Role;
use crate::settings::DemoSettings;
use crate::solver::{
    ModeSwitches, SolveState, SolverSetup, balance_active, is_solving, read_solve,
};

/// Frames of history in the convergence plot.
const HISTORY: usize = 240;

/// Times the solve, reads the residuals back, keeps the run's summary.
pub struct ReadoutsPlugin {
    /// Shared with `main`, which prints it at exit.
    pub summary: Arc<Mutex<RunSummary>>,
}

impl Plugin for ReadoutsPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Readouts::default())
            .insert_resource(SolveClock::default())
            .insert_resource(SharedSummary(self.summary.clone()))
            .add_systems(
                PostUpdate,
                (
                    start_solve_clock
                        .after(IkSystems::Prepare)
                        .before(IkSystems::Solve),
                    stop_solve_clock
                        .after(IkSystems::Solve)
                        .before(IkSystems::Writeback),
                    // After propagation: the VR readouts measure bones against trackers.
                    record_readouts
                        .after(IkSystems::Writeback)
                        .after(TransformSystems::Propagate),
                ),
            );
    }
}

/// Wall time of the IK solve set this frame.
#[derive(Resource, Default)]
struct SolveClock {
    started: Option<Instant>,
    micros: f32,
}

fn start_solve_clock(mut clock: ResMut<SolveClock>) {
    clock.started = Some(Instant::now());
}

fn stop_solve_clock(mut clock: ResMut<SolveClock>) {
    if let Some(start) = clock.started.take() {
        clock.micros = start.elapsed().as_secs_f32() * 1e6;
    }
}

/// One goal's readout: its last residual and its history.
#[derive(Default)]
pub struct GoalReadout {
    /// "3.2 mm", "off", …
    pub text: String,
    /// Residual per frame (mm, or degrees for rotation-only goals), last [`HISTORY`] frames;
    /// NaN where the goal was off.
    pub history: Vec<f32>,
}

/// What the panel shows about the solver.
#[derive(Resource, Default)]
pub struct Readouts {
    /// Per goal, in [`Role::ALL`] order.
    pub goals: [GoalReadout; 6],
    /// Solver iterations per frame (Jacobian solvers), last [`HISTORY`] frames.
    pub iterations: Vec<f32>,
    /// One line about the last solve.
    pub summary: String,
    /// The full-body balance goal's ground-plane residual ("off" when it is off).
    pub center_of_mass: String,
    /// The last problem reported, if any.
    pub error: Option<String>,
    /// The character's own solve time (µs, [`IkSolveTime`]: timed in its task), smoothed.
    pub solve_micros: f32,
    /// Wall time of the whole IK solve set (µs: scheduling and the thread pool included),
    /// smoothed.
    pub solve_set_micros: f32,
    /// Frame time (ms), smoothed.
    pub frame_ms: f32,
    /// The humanoid mapping of the character on screen.
    pub mapping: Option<MappingSummary>,
    /// The plugin's full mapping report (every role's bone and how it was found, what was
    /// not mapped and why), when it has one.
    pub mapping_report: Option<String>,
}

/// One goal in the [`RunSummary`].
#[derive(Clone, Debug, Default, Serialize)]
pub struct GoalSummary {
    /// `mm` or `deg`.
    pub unit: &'static str,
    /// Residual after the last solve.
    pub last: f32,
    /// Largest residual over the run's solved frames.
    pub max: f32,
    /// Within tolerance after the last solve.
    pub met: bool,
}

/// The run, as printed at exit: `IK_SUMMARY {json}`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    /// The character file.
    pub character: String,
    /// The solver mode.
    pub solver: String,
    /// Humanoid roles with a bone.
    pub roles_mapped: usize,
    /// Humanoid roles the map knows.
    pub roles_total: usize,
    /// Required roles without a bone.
    pub missing_required: Vec<String>,
    /// Optional roles without a bone.
    pub missing_optional: Vec<String>,
    /// Active goals.
    pub goals: usize,
    /// Active goals within tolerance after the last solve.
    pub goals_met: usize,
    /// Per active goal (`left_hand`, …).
    pub residuals: std::collections::BTreeMap<&'static str, GoalSummary>,
    /// Frames the solver wrote a pose.
    pub solves: u32,
    /// Mean solve time of the character per solved frame (µs, [`IkSolveTime`]: its gather,
    /// stack solve and write plan, timed in its task).
    pub mean_solve_us: f32,
    /// Largest of those (µs).
    pub max_solve_us: f32,
    /// Mean wall time of the whole IK solve set per solved frame (µs: the system set with
    /// its scheduling; on a software renderer the task often waits for a core).
    pub mean_solve_set_us: f32,
    /// The character's IK stack after the last frame, in run order: `name: status` per stage
    /// (see the `stack` module).
    pub stages: Vec<String>,
    /// Characters spawned over the run (a mode switch changes the character in place: 1).
    pub character_spawns: u32,
    /// Mode switches over the run (`--switch-from`, or the panel).
    pub mode_switches: u32,
    /// The screenshot written, if any.
    pub screenshot: Option<String>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

impl RunSummary {
    /// The one machine-readable line.
    pub fn line(&self) -> String {
        match serde_json::to_string(self) {
            Ok(json) => format!("IK_SUMMARY {json}"),
            Err(e) => format!("IK_SUMMARY {{\"error\":\"cannot serialise the summary: {e}\"}}"),
        }
    }
}

/// The summary `main` prints.
#[derive(Resource, Clone)]
pub struct SharedSummary(pub Arc<Mutex<RunSummary>>);

fn push(history: &mut Vec<f32>, value: f32) {
    if history.len() >= HISTORY {
        history.remove(0);
    }
    history.push(value);
}

fn record_readouts(
    settings: Res<DemoSettings>,
    humanoids: Query<
        (
            Entity,
            Option<&IkHumanoidTargets>,
            Option<&IkHumanoidBones>,
            &IkStatus,
            Option<&IkRig>,
            &SolverSetup,
            Option<&IkCenterOfMass>,
            Option<&IkHumanoidMapping>,
        ),
        With<Character>,
    >,
    limbs: Query<(&IkStatus, Has<IkDisabled>)>,
    statuses: Query<&IkStatus>,
    vr_stages: Query<(&IkVrBody, &IkStatus, &IkStageOf)>,
    globals: Query<&GlobalTransform>,
    names: Query<&Name>,
    asset: Option<Res<CharacterAsset>>,
    clock: Res<SolveClock>,
    solve_times: Query<&IkSolveTime>,
    time: Res<Time>,
    mut readouts: ResMut<Readouts>,
    shared: Res<SharedSummary>,
    counts: (Res<CharacterSpawns>, Res<ModeSwitches>),
    mut total_micros: Local<(f64, f64)>,
) {
    let r = &mut *readouts;
    let smooth = |old: f32, new: f32| {
        if old == 0.0 {
            new
        } else {
            old * 0.95 + new * 0.05
        }
    };
    r.frame_ms = smooth(r.frame_ms, time.delta_secs() * 1000.0);
    let Ok(mut summary) = shared.0.lock() else {
        return;
    };
    let name = asset.as_ref().map(|a| a.path.display()).unwrap_or_default();
    if summary.character != name {
        *summary = RunSummary {
            character: name,
            ..RunSummary::default()
        };
        *total_micros = (0.0, 0.0);
    }
    summary.error = asset.as_ref().and_then(|a| a.error.clone());
    summary.character_spawns = counts.0.0;
    summary.mode_switches = counts.1.0;
    let Ok((character, targets, bones, status, rig, setup, com, report)) = humanoids.single()
    else {
        r.mapping = None;
        r.mapping_report = None;
        return;
    };
    r.mapping_report = report.map(|m| m.details.clone());
    let mapping = MappingSummary::new(bones, status, |e| {
        names.get(e).ok().map(|n| n.as_str().to_owned())
    });
    summary.roles_mapped = mapping.mapped_count;
    summary.roles_total = mapping.roles();
    summary
        .missing_required
        .clone_from(&mapping.missing_required);
    summary
        .missing_optional
        .clone_from(&mapping.missing_optional);
    // In VR mode (a VR body stage on the character) the VR body's trackers are the goals.
    let vr = vr_stages
        .iter()
        .find(|(.., of)| of.0 == character)
        .map(|(vr, status, _)| (vr, status));
    let mode = if vr.is_some() {
        "vr"
    } else {
        setup.solver.name()
    };
    if summary.solver != mode {
        summary.solver = mode.to_owned();
        summary.residuals.clear();
        summary.solves = 0;
        *total_micros = (0.0, 0.0);
        summary.max_solve_us = 0.0;
    }
    r.mapping = Some(mapping);
    r.center_of_mass = if balance_active(setup, com) {
        format!("{:.1} mm", status.center_of_mass_residual * 1000.0)
    } else {
        "off".to_owned()
    };
    let (Some(targets), Some(bones)) = (targets, bones) else {
        // Not set up (yet, or a required role is missing): no goal to report.
        for readout in &mut r.goals {
            readout.text = "—".to_owned();
            push(&mut readout.history, f32::NAN);
        }
        r.iterations.clear();
        summary.goals = 0;
        summary.goals_met = 0;
        summary.residuals.clear();
        r.error = status.last_error.as_ref().map(ToString::to_string);
        summary.error = summary.error.clone().or_else(|| r.error.clone());
        r.summary = "not set up".to_owned();
        return;
    };
    let (solving, state): (bool, SolveState) = match vr {
        Some((vr, vr_status)) => (
            vr_status.solved,
            crate::vr::read_vr(vr, vr_status, bones, &globals),
        ),
        None => (
            is_solving(setup, targets, status, rig, &statuses),
            read_solve(&settings, setup, targets, bones, status, rig, &limbs),
        ),
    };
    if solving {
        let own = solve_times
            .get(character)
            .map_or(0.0, |t| t.last.as_secs_f32() * 1e6);
        r.solve_micros = smooth(r.solve_micros, own);
        r.solve_set_micros = smooth(r.solve_set_micros, clock.micros);
        summary.solves += 1;
        total_micros.0 += f64::from(own);
        total_micros.1 += f64::from(clock.micros);
        summary.mean_solve_us = (total_micros.0 / f64::from(summary.solves)) as f32;
        summary.max_solve_us = summary.max_solve_us.max(own);
        summary.mean_solve_set_us = (total_micros.1 / f64::from(summary.solves)) as f32;
    }
    r.summary = state.summary.clone();
    r.error = state.error.clone();
    match state.iterations {
        Some(i) => push(&mut r.iterations, i as f32),
        None => r.iterations.clear(),
    }
    summary.goals = 0;
    summary.goals_met = 0;
    for role in Role::ALL {
        let goal = &state.goals[role.index()];
        let readout = &mut r.goals[role.index()];
        readout.text.clone_from(&goal.text);
        push(&mut readout.history, goal.value);
        if !goal.active {
            summary.residuals.remove(role.key());
            continue;
        }
        summary.goals += 1;
        summary.goals_met += usize::from(goal.met);
        if solving {
            let entry = summary.residuals.entry(role.key()).or_default();
            entry.unit = if goal.degrees { "deg" } else { "mm" };
            entry.last = goal.value;
            // NaN (not solved) must show, not vanish in a max.
            entry.max = if goal.value.is_nan() || entry.max.is_nan() {
                f32::NAN
            } else {
                entry.max.max(goal.value)
            };
            entry.met = goal.met;
        }
    }
}

/// The residual and iteration plots.
pub fn convergence_plots(ui: &mut egui::Ui, readouts: &Readouts) {
    let colors = [
        egui::Color32::from_rgb(255, 184, 28),
        egui::Color32::from_rgb(80, 200, 255),
        egui::Color32::from_rgb(255, 110, 60),
        egui::Color32::from_rgb(120, 230, 120),
        egui::Color32::from_rgb(60, 220, 220),
        egui::Color32::from_rgb(230, 120, 255),
    ];
    ui.label("Residual per goal (mm; head in °)");
    Plot::new("residuals")
        .height(130.0)
        .legend(Legend::default())
        .include_y(0.0)
        .include_y(1.0)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .show(ui, |plot| {
            for role in Role::ALL {
                let r = &readouts.goals[role.index()];
                let points: PlotPoints = r
                    .history
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_finite())
                    .map(|(x, &y)| [x as f64, f64::from(y)])
                    .collect();
                if points.points().is_empty() {
                    continue;
                }
                plot.line(Line::new(role.label(), points).color(colors[role.index()]));
            }
        });
    if !readouts.iterations.is_empty() {
        ui.label("Solver iterations per frame");
        Plot::new("iterations")
            .height(80.0)
            .include_y(0.0)
            .allow_scroll(false)
            .allow_drag(false)
            .allow_zoom(false)
            .show(ui, |plot| {
                let points: PlotPoints = readouts
                    .iterations
                    .iter()
                    .enumerate()
                    .map(|(x, &y)| [x as f64, f64::from(y)])
                    .collect();
                plot.line(Line::new("iterations", points).color(egui::Color32::LIGHT_GRAY));
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_one_line_of_json_with_nan_as_null() {
        let mut summary = RunSummary {
            character: "a \"quoted\"\nname.glb".to_owned(),
            roles_mapped: 20,
            roles_total: 24,
            goals: 2,
            goals_met: 1,
            ..RunSummary::default()
        };
        summary.residuals.insert(
            "left_hand",
            GoalSummary {
                unit: "mm",
                last: 0.5,
                max: f32::NAN,
                met: true,
            },
        );
        let line = summary.line();
        assert!(line.starts_with("IK_SUMMARY {"), "{line}");
        assert!(!line.contains('\n'));
        assert!(line.contains(r#""roles_mapped":20"#), "{line}");
        assert!(line.contains(r#""max":null"#), "{line}");
        assert!(line.contains(r#"a \"quoted\"\nname.glb"#), "{line}");
    }
}
