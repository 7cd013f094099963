//! The character's IK stack, as `bevy_ik` runs it: a window listing every stage in the order
//! it runs on the one pose (the character's own stage first, then its [`IkStages`]), with each
//! stage's weight and status, and the option to add analytic arms *after* the panel's solver —
//! the `[full body, analytic arm]` stack, where each arm sees the full body's output.
//!
//! The panel's solver choice is the stack's first stages (`IkHumanoid`'s full-body stage, the
//! four analytic limbs, or a Jacobian `IkRig`); stages the demo adds here, and any stage
//! another plugin puts on the character (`IkStageOf(character)`), can be switched off
//! ([`IkDisabled`]) and reordered (Bevy's ordered relationship:
//! `insert_related::<IkStageOf>(index, ..)`) from the window.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use bevy_ik::ik_core::humanoid::HumanoidBone as H;
use bevy_ik::prelude::*;

use crate::character::Character;
use crate::readouts::SharedSummary;
use crate::settings::DemoSettings;
use crate::solver::SolverUi;

/// The stack window and the analytic arms on top.
pub struct StackPlugin;

impl Plugin for StackPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, (sync_arm_layers, record_stack))
            .add_systems(EguiPrimaryContextPass, stack_window);
    }
}

/// An analytic arm the demo put after the panel's solver (left arm `0`, right arm `1`).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArmLayer(pub usize);

/// Whether the settings ask for analytic arms after the panel's solver. Not with the analytic
/// limbs (they already are the arms).
pub fn wants_arm_layers(settings: &DemoSettings) -> bool {
    settings.arms_on_top && settings.solver != SolverUi::Limbs
}

/// The analytic arm stages for `settings` on a set-up humanoid: the upper arm, forearm and
/// hand bones and the hand target of each side that has them.
pub fn arm_layers(
    bones: &IkHumanoidBones,
    targets: &IkHumanoidTargets,
) -> Vec<(usize, IkLimb, &'static str)> {
    let sides = [
        (
            H::LeftUpperArm,
            H::LeftLowerArm,
            H::LeftHand,
            targets.left_hand,
            "analytic arm L (after the solver)",
        ),
        (
            H::RightUpperArm,
            H::RightLowerArm,
            H::RightHand,
            targets.right_hand,
            "analytic arm R (after the solver)",
        ),
    ];
    sides
        .into_iter()
        .enumerate()
        .filter_map(|(i, (u, l, h, target, name))| {
            let (u, l, h, target) = (bones.get(u)?, bones.get(l)?, bones.get(h)?, target?);
            // No pole: the arm keeps the bend plane the stages before it chose.
            Some((i, IkLimb::new(u, l, h).with_target(target), name))
        })
        .collect()
}

/// Spawns or despawns the analytic arms after the panel's solver as the settings ask, and
/// points them at the hand targets the current mode uses (a mode switch may give the hands new
/// target entities).
fn sync_arm_layers(
    settings: Res<DemoSettings>,
    characters: Query<(Entity, &IkHumanoidBones, Ref<IkHumanoidTargets>), With<Character>>,
    mut layers: Query<(Entity, &IkStageOf, &ArmLayer, &mut IkLimb)>,
    mut commands: Commands,
) {
    let Ok((character, bones, targets)) = characters.single() else {
        return;
    };
    let wanted = wants_arm_layers(&settings);
    let mut present = 0;
    for (e, of, side, mut limb) in &mut layers {
        if of.0 != character {
            continue;
        }
        present += 1;
        if !wanted {
            commands.entity(e).despawn();
            continue;
        }
        let hand = if side.0 == 0 {
            targets.left_hand
        } else {
            targets.right_hand
        };
        if targets.is_changed()
            && let Some(hand) = hand
            && limb.target != Some(hand)
        {
            limb.target = Some(hand);
        }
    }
    if wanted && present == 0 {
        for (side, limb, name) in arm_layers(bones, &targets) {
            commands.spawn((
                Name::new(name),
                limb,
                ArmLayer(side),
                ChildOf(character),
                IkStageOf(character),
            ));
        }
    }
}

/// One stage as the window shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct StageRow {
    /// The stage entity.
    pub entity: Entity,
    /// Its `Name`, else its kind.
    pub name: String,
    /// Which `bevy_ik` component describes it.
    pub kind: &'static str,
    /// Its blend weight.
    pub weight: f32,
    /// Switched off with [`IkDisabled`].
    pub disabled: bool,
    /// The panel's solver settings own it (its weight and on/off follow the panel).
    pub managed: bool,
    /// The status line.
    pub status: String,
}

type StageItem<'a> = (
    Option<&'a Name>,
    Option<&'a IkHumanoid>,
    Option<&'a IkRig>,
    Option<&'a IkLimb>,
    Option<&'a IkCustom>,
    Has<IkDisabled>,
    Option<&'a IkStatus>,
    Has<ArmLayer>,
);

/// The kind and weight of a stage from its description (the same precedence the plugin uses:
/// full body, rig, limb, custom).
fn describe(
    humanoid: Option<&IkHumanoid>,
    rig: Option<&IkRig>,
    limb: Option<&IkLimb>,
    custom: Option<&IkCustom>,
) -> Option<(&'static str, f32)> {
    if let Some(h) = humanoid.filter(|h| h.solver == IkHumanoidSolver::FullBody) {
        return Some(("full body", h.weight));
    }
    if let Some(r) = rig {
        return Some(("Jacobian rig", r.weight));
    }
    if let Some(l) = limb {
        return Some(("analytic limb", l.weight));
    }
    custom.map(|c| ("custom", c.weight))
}

fn status_line(status: Option<&IkStatus>, disabled: bool, weight: f32) -> String {
    match status {
        _ if disabled => "off".to_owned(),
        // Not solved at all (`bevy_ik` skips a stage at weight 0).
        _ if weight == 0.0 => "faded out (weight 0)".to_owned(),
        Some(s) if s.last_error.is_some() => {
            format!(
                "problem: {}",
                s.last_error
                    .as_ref()
                    .map_or(String::new(), ToString::to_string)
            )
        }
        Some(s) if s.solved => format!(
            "{} · {:.2} mm · {} it",
            if s.converged { "met" } else { "best effort" },
            s.position_residual * 1000.0,
            s.iterations
        ),
        _ => "not solved yet".to_owned(),
    }
}

/// The character's stages in the order they run.
pub fn stage_rows(
    character: Entity,
    ik: &IkCharacter,
    stages: &Query<StageItem<'_>>,
) -> Vec<StageRow> {
    ik.stages()
        .filter_map(|e| {
            let (name, humanoid, rig, limb, custom, disabled, status, layer) =
                stages.get(e).ok()?;
            let (kind, weight) = describe(humanoid, rig, limb, custom)?;
            Some(StageRow {
                entity: e,
                name: if e == character {
                    // The character entity's own stage (e.g. `IkHumanoid::auto()`'s full body).
                    format!("{kind} (the character's own stage)")
                } else {
                    name.map_or_else(|| kind.to_owned(), |n| n.as_str().to_owned())
                },
                kind,
                weight,
                disabled,
                // The character's own stage and the humanoid's limbs follow the panel.
                managed: e == character || (!layer && kind != "custom"),
                status: status_line(status, disabled, weight),
            })
        })
        .collect()
}

/// Puts the stack, `name: status` per stage, into the run's `IK_SUMMARY`.
fn record_stack(
    characters: Query<(Entity, &IkCharacter), With<Character>>,
    stages: Query<StageItem<'_>>,
    shared: Option<Res<SharedSummary>>,
) {
    let (Ok((character, ik)), Some(shared)) = (characters.single(), shared) else {
        return;
    };
    let Ok(mut summary) = shared.0.lock() else {
        return;
    };
    summary.stages = stage_rows(character, ik, &stages)
        .into_iter()
        .map(|r| format!("{}: {}", r.name, r.status))
        .collect();
}

fn stack_window(
    mut contexts: EguiContexts,
    mut settings: ResMut<DemoSettings>,
    characters: Query<(Entity, &IkCharacter, Option<&IkStages>), With<Character>>,
    stages: Query<StageItem<'_>>,
    mut commands: Commands,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let Ok((character, ik, list)) = characters.single() else {
        return Ok(());
    };
    let rows = stage_rows(character, ik, &stages);
    let order: Vec<Entity> = list.map_or_else(Vec::new, |l| l.entities().to_vec());
    let mut arms = settings.arms_on_top;
    egui::Window::new("IK stack")
        .anchor(egui::Align2::RIGHT_TOP, egui::vec2(-8.0, 8.0))
        .resizable(false)
        .default_open(crate::panel::floating_windows_open(ctx))
        .show(ctx, |ui| {
            ui.small("One pose, stages in order: each sees the one before; written once.");
            for (i, row) in rows.iter().enumerate() {
                ui.horizontal(|ui| {
                    ui.label(format!("{}.", i + 1));
                    if row.managed {
                        ui.label(if row.disabled { "off" } else { "on" })
                            .on_hover_text("Set by the panel's solver settings");
                    } else {
                        let mut on = !row.disabled;
                        if ui.checkbox(&mut on, "").changed() {
                            if on {
                                commands.entity(row.entity).remove::<IkDisabled>();
                            } else {
                                commands.entity(row.entity).insert(IkDisabled);
                            }
                        }
                    }
                    ui.label(&row.name)
                        .on_hover_text(format!("{} · weight {:.2}", row.kind, row.weight));
                    // Reordering moves a stage within the character's `IkStages`.
                    if let Some(at) = order.iter().position(|&e| e == row.entity)
                        && !row.managed
                    {
                        if at > 0 && ui.small_button("up").clicked() {
                            commands
                                .entity(character)
                                .insert_related::<IkStageOf>(at - 1, &[row.entity]);
                        }
                        if at + 1 < order.len() && ui.small_button("down").clicked() {
                            commands
                                .entity(character)
                                .insert_related::<IkStageOf>(at + 1, &[row.entity]);
                        }
                    }
                });
                ui.small(format!("    {}", row.status));
            }
            ui.add_enabled_ui(settings.solver != SolverUi::Limbs, |ui| {
                ui.checkbox(&mut arms, "Analytic arms after the solver")
                    .on_hover_text(
                        "Adds two IkLimb stages after the solver: the hands land exactly on their \
                         targets from the pose the solver left (not with the analytic limbs, which \
                         already are the arms)",
                    );
            });
        });
    if arms != settings.arms_on_top {
        settings.arms_on_top = arms;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_layers_are_wanted_only_when_asked_and_not_over_the_limbs() {
        let mut s = DemoSettings::default();
        assert!(!wants_arm_layers(&s), "off by default");
        s.arms_on_top = true;
        for (solver, wanted) in [
            (SolverUi::FullBody, true),
            (SolverUi::Rig, true),
            (SolverUi::Limbs, false),
        ] {
            s.solver = solver;
            assert_eq!(wants_arm_layers(&s), wanted, "{solver:?}");
        }
    }

    #[test]
    fn status_lines_say_off_problem_met_or_best_effort() {
        let mut s = IkStatus {
            ready: true,
            solved: true,
            converged: true,
            iterations: 3,
            position_residual: 0.0004,
            ..IkStatus::default()
        };
        assert_eq!(status_line(Some(&s), true, 1.0), "off");
        assert_eq!(status_line(Some(&s), false, 1.0), "met · 0.40 mm · 3 it");
        s.converged = false;
        assert!(status_line(Some(&s), false, 1.0).starts_with("best effort"));
        s.last_error = Some(IkError::NonFinitePose);
        assert!(status_line(Some(&s), false, 1.0).starts_with("problem: "));
        assert_eq!(status_line(None, false, 1.0), "not solved yet");
        assert_eq!(status_line(Some(&s), false, 0.0), "faded out (weight 0)");
    }
}
