//! The egui side panel: the character picker and its humanoid mapping, the solver and its
//! settings, what is drawn, the readouts and plots; "Save"/"Load" keep the settings in
//! [`SETTINGS_FILE`].

use std::path::Path;

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use transform_gizmo_bevy::{GizmoMode, GizmoOptions};

use crate::character::{
    BundledCharacters, CharacterAsset, CharacterChoice, CharacterPath, EXTENSIONS,
};
use crate::handles::{Role, reset_pose};
use crate::readouts::{Readouts, convergence_plots};
use crate::settings::{
    DemoSettings, FullBodyUi, LimbUi, RigUi, SETTINGS_FILE, load_settings, save_settings,
};
use crate::solver::SolverUi;

/// Logical width of the egui side panel (the 3D view gets the rest of the window).
pub const PANEL_WIDTH: f32 = 330.0;
/// The narrowest 3D view (logical pixels right of the panel) beside which the floating windows
/// (terrain, IK stack) start open: the default 1280-pixel window leaves 950. In a narrower
/// window they start collapsed to their title bars, so that they do not cover the character
/// and its handles (a click on the title opens them).
const ROOMY_VIEW: f32 = 900.0;

/// Whether the floating windows start open: the window leaves at least [`ROOMY_VIEW`] beside
/// the panel.
pub fn floating_windows_open(ctx: &egui::Context) -> bool {
    ctx.content_rect().width() - PANEL_WIDTH >= ROOMY_VIEW
}

/// The side panel.
pub struct PanelPlugin;

impl Plugin for PanelPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(EguiPrimaryContextPass, panel);
    }
}

/// What the panel asked for this frame.
#[derive(Default)]
struct PanelActions {
    reset: bool,
    save: bool,
    load: bool,
    gizmo_modes: Option<transform_gizmo_bevy::EnumSet<GizmoMode>>,
    open: Option<CharacterPath>,
}

fn panel(
    mut contexts: EguiContexts,
    mut settings: ResMut<DemoSettings>,
    mut gizmo: ResMut<GizmoOptions>,
    readouts: Res<Readouts>,
    mut choice: ResMut<CharacterChoice>,
    bundled: Res<BundledCharacters>,
    asset: Option<Res<CharacterAsset>>,
    mut message: Local<String>,
    mut commands: Commands,
    mut behaviours: ResMut<crate::behaviours::BehaviourUi>,
    behaviour_info: Res<crate::behaviours::BehaviourInfo>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let mut edited = settings.clone();
    let mut actions = PanelActions::default();
    // egui 0.36 panels are shown inside a `Ui`: one on the background layer over the whole
    // window, as bevy_egui's `side_panel` example does.
    let mut root = egui::Ui::new(
        ctx.clone(),
        "bevy_ik_root".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(ctx.viewport_rect()),
    );
    egui::Panel::left("bevy_ik")
        .exact_size(PANEL_WIDTH)
        .resizable(false)
        .show(&mut root, |ui| {
            ui.heading("bevy_ik");
            character_section(
                ui,
                &choice.0,
                &bundled.0,
                asset.as_deref(),
                &readouts,
                &mut actions,
            );
            egui::CollapsingHeader::new("Behaviours: look-at, aim, twist")
                .default_open(true)
                .show(ui, |ui| {
                    crate::behaviours::controls(ui, &mut behaviours, &behaviour_info);
                });
            panel_contents(ui, &mut edited, &readouts, &gizmo, &message, &mut actions);
        });
    if actions.reset {
        commands.queue(reset_pose);
    }
    if actions.save {
        *message = match save_settings(&edited, Path::new(SETTINGS_FILE)) {
            Ok(()) => format!("Saved {SETTINGS_FILE}"),
            Err(e) => e,
        };
    }
    if actions.load {
        *message = match load_settings(Path::new(SETTINGS_FILE)) {
            Ok(loaded) => {
                edited = loaded;
                format!("Loaded {SETTINGS_FILE}")
            }
            Err(e) => e,
        };
    }
    if *settings != edited {
        *settings = edited;
    }
    if let Some(modes) = actions.gizmo_modes {
        gizmo.gizmo_modes = modes;
    }
    if let Some(path) = actions.open
        && choice.0 != path
    {
        choice.0 = path;
    }
    Ok(())
}

/// The picker, the load state and the humanoid mapping.
fn character_section(
    ui: &mut egui::Ui,
    current: &CharacterPath,
    bundled: &[String],
    asset: Option<&CharacterAsset>,
    readouts: &Readouts,
    actions: &mut PanelActions,
) {
    ui.horizontal(|ui| {
        ui.label("Character:");
        egui::ComboBox::from_id_salt("character")
            .width(220.0)
            .selected_text(match current {
                CharacterPath::Asset(name) => name.clone(),
                CharacterPath::File(path) => path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into(),
                ),
            })
            .show_ui(ui, |ui| {
                for name in bundled {
                    let path = CharacterPath::Asset(name.clone());
                    if ui.selectable_label(*current == path, name).clicked() {
                        actions.open = Some(path);
                    }
                }
            });
    })
    .response
    .on_hover_text(format!(
        "{}\nDrop a .{} file on the window to open it",
        current.display(),
        EXTENSIONS.join("/.")
    ));
    match (asset, &readouts.mapping) {
        (Some(a), _) if a.error.is_some() => {
            ui.colored_label(
                egui::Color32::LIGHT_RED,
                a.error.as_deref().unwrap_or_default(),
            );
        }
        (Some(a), None) if a.scene.is_none() => {
            ui.label("Loading…");
        }
        (_, None) => {
            ui.label("Spawning…");
        }
        (Some(a), Some(m)) => {
            let clip = a.idle.as_ref().map_or_else(
                || "no idle clip".to_owned(),
                |i| format!("clip `{}`", i.name),
            );
            let text = format!(
                "Humanoid: {} of {} roles mapped · {clip}",
                m.mapped_count,
                m.roles()
            );
            let mapped: Vec<String> = m
                .mapped
                .iter()
                .map(|(role, bone)| format!("{role} → {bone}"))
                .collect();
            ui.label(text).on_hover_text(mapped.join("\n"));
            if !m.missing_required.is_empty() {
                ui.colored_label(
                    egui::Color32::LIGHT_RED,
                    format!(
                        "Missing required: {} (nothing is set up)",
                        m.missing_required.join(", ")
                    ),
                );
            }
            if !m.missing_optional.is_empty() {
                ui.small(format!(
                    "Not in this rig: {}",
                    m.missing_optional.join(", ")
                ));
            }
            if let Some(report) = &readouts.mapping_report {
                ui.collapsing("Mapping report", |ui| {
                    egui::ScrollArea::vertical()
                        .max_height(200.0)
                        .show(ui, |ui| ui.small(report.as_str()));
                });
            }
        }
        (None, Some(_)) => {}
    }
    ui.separator();
}

fn panel_contents(
    ui: &mut egui::Ui,
    settings: &mut DemoSettings,
    readouts: &Readouts,
    gizmo: &GizmoOptions,
    message: &str,
    actions: &mut PanelActions,
) {
    ui.label(format!(
        "{:.1} ms/frame ({:.0} fps) · IK solve {:.0} µs",
        readouts.frame_ms,
        1000.0 / readouts.frame_ms.max(0.01),
        readouts.solve_micros
    ))
    .on_hover_text(format!(
        "This character's own IK time (IkSolveTime: its gather, stack solve and write plan, \
         timed in its task), smoothed. The whole IK solve system set took {:.0} µs \
         (scheduling and the thread pool included).",
        readouts.solve_set_micros
    ));
    ui.horizontal(|ui| {
        ui.label("Solver:");
        ui.radio_value(&mut settings.solver, SolverUi::FullBody, "Full body")
            .on_hover_text(
                "IkHumanoid full body: ik-core's hybrid solver (Jacobian over the body, limbs finished analytically), head look-at",
            );
        ui.radio_value(&mut settings.solver, SolverUi::Rig, "Jacobian rig")
            .on_hover_text("An IkRig on the mapped bones: per-goal weights, priority levels, blends");
        ui.radio_value(&mut settings.solver, SolverUi::Limbs, "Analytic limbs")
            .on_hover_text("IkHumanoid limbs: four analytic two-bone IkLimbs with elbow and knee poles");
    });
    ui.small(&readouts.summary);
    if let Some(e) = &readouts.error {
        ui.colored_label(egui::Color32::LIGHT_RED, e);
    }
    ui.separator();
    ui.horizontal(|ui| {
        ui.checkbox(&mut settings.animation, "Idle animation");
        ui.checkbox(&mut settings.scripted_motion, "Scripted targets");
    });
    ui.horizontal(|ui| {
        if ui.button("Reset pose").clicked() {
            actions.reset = true;
        }
        if ui.button("Save").on_hover_text(SETTINGS_FILE).clicked() {
            actions.save = true;
        }
        if ui.button("Load").on_hover_text(SETTINGS_FILE).clicked() {
            actions.load = true;
        }
        if ui.button("Defaults").clicked() {
            *settings = DemoSettings {
                solver: settings.solver,
                ..DemoSettings::default()
            };
        }
    });
    if !message.is_empty() {
        ui.small(message);
    }
    ui.horizontal(|ui| {
        ui.label("Gizmo:");
        let translate = gizmo.gizmo_modes == GizmoMode::all_translate();
        if ui.selectable_label(translate, "Translate (T)").clicked() {
            actions.gizmo_modes = Some(GizmoMode::all_translate());
        }
        if ui.selectable_label(!translate, "Rotate (R)").clicked() {
            actions.gizmo_modes = Some(GizmoMode::all_rotate());
        }
    });
    ui.small("Click a handle to select · Esc deselect · L local axes · right drag orbit · middle drag pan · wheel zoom · F12 screenshot");
    ui.separator();

    egui::ScrollArea::vertical().show(ui, |ui| {
        match settings.solver {
            SolverUi::FullBody => full_body_controls(ui, &mut settings.full_body, readouts),
            SolverUi::Rig => rig_controls(ui, &mut settings.rig, readouts),
            SolverUi::Limbs => limb_controls(ui, &mut settings.limbs, readouts),
        }
        ui.separator();
        ui.label("Draw");
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut settings.draw.handles, "Handles");
            ui.checkbox(&mut settings.draw.goal_lines, "Goal lines");
            ui.checkbox(&mut settings.draw.skeleton, "Skeleton");
            ui.checkbox(&mut settings.draw.grid, "Grid");
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("bevy_ik:");
            ui.checkbox(&mut settings.draw.ik_chains, "Chains");
            ui.checkbox(&mut settings.draw.ik_limits, "Limits");
            ui.checkbox(&mut settings.draw.ik_residuals, "Residuals");
            ui.checkbox(&mut settings.draw.ik_balance, "Centre of mass");
        })
        .response
        .on_hover_text(
            "The plugin's IkDebugDraw (analytic limbs, Jacobian rigs and the full body)",
        );
        ui.separator();
        convergence_plots(ui, readouts);
    });
}

/// The position (mm) and angle (°) tolerance sliders of the Jacobian solvers' panels.
fn tolerance_sliders(ui: &mut egui::Ui, position_mm: &mut f32, angle_deg: &mut f32) {
    ui.add(
        egui::Slider::new(position_mm, 0.01..=10.0)
            .logarithmic(true)
            .text("Tolerance (mm)"),
    );
    ui.add(
        egui::Slider::new(angle_deg, 0.01..=5.0)
            .logarithmic(true)
            .text("Angle tolerance (°)"),
    );
}

fn full_body_controls(ui: &mut egui::Ui, fb: &mut FullBodyUi, readouts: &Readouts) {
    ui.add(egui::Slider::new(&mut fb.weight, 0.0..=1.0).text("IK weight"));
    ui.small("Applied live (the head look-at sets the character up again, in place)");
    ui.add(egui::Slider::new(&mut fb.max_iterations, 1..=100).text("Iterations per frame"));
    ui.add(egui::Slider::new(&mut fb.max_restarts, 0..=8).text("Restarts (first frame)"));
    tolerance_sliders(
        ui,
        &mut fb.position_tolerance_mm,
        &mut fb.rotation_tolerance_deg,
    );
    ui.add(
        egui::Slider::new(&mut fb.damping, 0.0..=0.5)
            .logarithmic(true)
            .smallest_positive(0.001)
            .text("Damping"),
    );
    ui.add(egui::Slider::new(&mut fb.posture_gain, 0.0..=1.0).text("Reference pose"))
        .on_hover_text("Null-space pull toward the animated pose");
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut fb.analytic_limbs, "Analytic limb finish");
        ui.checkbox(&mut fb.head, "Head look-at");
    });
    ui.checkbox(&mut fb.center_of_mass, "Centre of mass")
        .on_hover_text(
            "IkBalance: keep the centre of mass over a point between the feet targets (live)",
        );
    if fb.center_of_mass {
        ui.add(egui::Slider::new(&mut fb.support_bias, 0.0..=1.0).text("Support (L ↔ R)"));
    }
    ui.label(format!(
        "Centre of mass to support: {}",
        readouts.center_of_mass
    ));
    for role in Role::ALL {
        ui.label(format!(
            "{}: {}",
            role.label(),
            readouts.goals[role.index()].text
        ));
    }
}

fn rig_controls(ui: &mut egui::Ui, rig: &mut RigUi, readouts: &Readouts) {
    ui.add(egui::Slider::new(&mut rig.weight, 0.0..=1.0).text("IK weight"));
    ui.add(egui::Slider::new(&mut rig.max_iterations, 1..=64).text("Max iterations"));
    tolerance_sliders(
        ui,
        &mut rig.position_tolerance_mm,
        &mut rig.angle_tolerance_deg,
    );
    ui.add(egui::Slider::new(&mut rig.posture_gain, 0.0..=1.0).text("Reference pose"))
        .on_hover_text("Pull toward the animated pose in the freedom the goals leave");
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut rig.joint_limits, "Joint limits");
        ui.checkbox(&mut rig.pelvis_translates, "Pelvis moves");
        ui.checkbox(&mut rig.head_look_at, "Head looks at target");
    });
    for role in Role::ALL {
        let g = &mut rig.goals[role.index()];
        let header = format!(
            "{}: {}  (P{})",
            role.label(),
            readouts.goals[role.index()].text,
            g.priority
        );
        egui::CollapsingHeader::new(header)
            .id_salt(role.label())
            .default_open(false)
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    ui.checkbox(&mut g.enabled, "On");
                    if role != Role::Head {
                        ui.checkbox(&mut g.rotation, "Match rotation");
                    }
                });
                ui.add(
                    egui::Slider::new(&mut g.weight, 0.01..=10.0)
                        .logarithmic(true)
                        .text("Weight"),
                );
                ui.add(egui::Slider::new(&mut g.priority, 0..=3).text("Priority (0 = first)"));
                ui.add(egui::Slider::new(&mut g.blend, 0.0..=1.0).text("Blend"));
            });
    }
}

fn limb_controls(ui: &mut egui::Ui, limbs: &mut [LimbUi; 4], readouts: &Readouts) {
    for role in Role::ALL {
        let Some(i) = role.limb() else { continue };
        let limb = &mut limbs[i];
        let header = format!("{}: {}", role.label(), readouts.goals[role.index()].text);
        egui::CollapsingHeader::new(header)
            .id_salt(role.label())
            .default_open(false)
            .show(ui, |ui| {
                ui.checkbox(&mut limb.enabled, "Solve (analytic two-bone)");
                ui.add(egui::Slider::new(&mut limb.weight, 0.0..=1.0).text("IK weight"));
                ui.add(
                    egui::Slider::new(&mut limb.rotation_weight, 0.0..=1.0).text("Rotation weight"),
                );
                ui.horizontal(|ui| {
                    ui.checkbox(&mut limb.use_pole, "Pole");
                    ui.add_enabled(
                        limb.use_pole,
                        egui::Slider::new(&mut limb.pole_weight, 0.0..=1.0).text("weight"),
                    );
                });
                ui.add(egui::Slider::new(&mut limb.soft_reach, 0.0..=0.3).text("Soft reach"));
                ui.checkbox(&mut limb.flex_limits, "Joint limit (flex 3°–150°)");
            });
    }
}
