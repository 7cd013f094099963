//! Everything that depends on which solver drives the character ([`SolverUi`]), in one place:
//! the stack each mode builds on the character, pushing the panel's settings into its stages,
//! reading each goal's residual back, and which goals and handles a mode uses.
//!
//! Each mode is a stack of its own on the one character (plus whatever the stack window and
//! the behaviours add after it):
//!
//! - full body: `[full body]` — [`IkHumanoid`]'s full-body stage on the character entity;
//! - Jacobian rig: `[Jacobian rig]` — an [`IkRig`] on the character entity, with a goal per
//!   target. The humanoid only maps the bones (no limb stages are built); the rig's hand and
//!   foot targets are spawned here, where the bones stand;
//! - analytic limbs: `[left arm, right arm, left leg, right leg]` — [`IkHumanoid::limbs`]'s
//!   four [`IkLimb`] stages.
//!
//! A mode switch changes the character in place ([`switch_setup`]): the new [`IkHumanoid`]
//! fields are written to the same character, which sets itself up again — the targets the new
//! mode shares with the old one keep their entities and where the user dragged them, the new
//! ones spawn where the bones stand, the old mode's stages give way to the new mode's at their
//! place in the stack, and every stage of the user's own (behaviours, the stack window's arm
//! layers) stays. The rig mode's own pieces (the [`IkRig`], its hand and foot targets, the
//! head target in front of the face) are added and taken off here. Every full-body setting is
//! live: nothing is re-created when one changes.

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;
use serde::{Deserialize, Serialize};

use crate::character::{BodyFrame, Character};
use crate::handles::{HeadAxis, Role, TargetHandle};
use crate::settings::{DemoSettings, FullBodyUi, RigUi};

/// Which `bevy_ik` solver drives the character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SolverUi {
    /// [`IkHumanoidSolver::FullBody`]: ik-core's hybrid full-body solver (Jacobian over every
    /// humanoid joint, limbs finished analytically), head look-at.
    FullBody,
    /// An [`IkRig`] the demo builds on the mapped bones: the general Jacobian rig, with per-goal
    /// weights, priority levels and blends.
    Rig,
    /// [`IkHumanoidSolver::Limbs`]: four analytic two-bone [`IkLimb`]s with elbow and knee poles.
    Limbs,
}

impl SolverUi {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            SolverUi::FullBody => "full-body",
            SolverUi::Rig => "rig",
            SolverUi::Limbs => "limbs",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        [SolverUi::FullBody, SolverUi::Rig, SolverUi::Limbs]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// Registers the mode-dependent systems.
pub struct SolverPlugin;

impl Plugin for SolverPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<ModeSwitches>().add_systems(
            Update,
            (
                switch_setup,
                attach_rig.before(crate::handles::decorate_targets),
                apply_solver_settings,
            )
                .chain(),
        );
    }
}

/// What the character was set up with: on the character's root next to its [`IkHumanoid`].
#[derive(Component, Clone, Copy, Debug)]
pub struct SolverSetup {
    /// The mode.
    pub solver: SolverUi,
    /// The full-body settings at set-up.
    pub full_body: FullBodyUi,
}

impl SolverSetup {
    /// The set-up these settings ask for.
    pub fn from_settings(settings: &DemoSettings) -> Self {
        Self {
            solver: settings.solver,
            full_body: settings.full_body,
        }
    }

    /// Whether the character must be set up again to follow `settings`: another mode, or the
    /// head goal switched (the other full-body settings are applied live).
    pub fn needs_set_up(&self, settings: &DemoSettings) -> bool {
        self.solver != settings.solver || self.full_body.head != settings.full_body.head
    }

    /// Writes this set-up into `humanoid`, keeping the grip the behaviours panel sets (a
    /// change only where a field differs).
    pub fn apply_to(&self, humanoid: &mut Mut<IkHumanoid>) {
        let want = IkHumanoid {
            grip: humanoid.grip,
            ..self.humanoid()
        };
        humanoid.set_if_neq(want);
    }

    /// The humanoid component for this set-up.
    pub fn humanoid(&self) -> IkHumanoid {
        let fb = self.full_body;
        // The rig mode: the humanoid maps the bones and builds no stage of its own (no limbs);
        // the rig is the character's stage (see `attach_rig`).
        let limbs = self.solver == SolverUi::Limbs;
        IkHumanoid {
            solver: match self.solver {
                SolverUi::FullBody => IkHumanoidSolver::FullBody,
                SolverUi::Rig | SolverUi::Limbs => IkHumanoidSolver::Limbs,
            },
            arms: self.solver != SolverUi::Rig,
            legs: self.solver != SolverUi::Rig,
            poles: limbs,
            head: fb.head,
            weight: if self.solver == SolverUi::FullBody {
                fb.weight
            } else {
                1.0
            },
            full_body_settings: fb.core(),
            balance: fb.balance(),
            ..IkHumanoid::auto()
        }
    }
}

/// Follows the panel's mode and full-body settings on the character in place (see the module
/// docs): the new set-up's fields go into its [`IkHumanoid`], which sets itself up again when
/// the mode or the head goal changed; leaving the rig mode takes its [`IkRig`] off and puts the
/// head target back on the head.
pub fn switch_setup(
    mut commands: Commands,
    settings: Res<DemoSettings>,
    mut characters: Query<
        (
            Entity,
            &mut SolverSetup,
            &mut IkHumanoid,
            Option<&IkHumanoidTargets>,
            Option<&IkHumanoidBones>,
        ),
        With<Character>,
    >,
    parents: Query<&ChildOf>,
    globals: Query<&GlobalTransform>,
    mut transforms: Query<&mut Transform>,
    mut switches: ResMut<ModeSwitches>,
) {
    if !settings.is_changed() {
        return;
    }
    let want = SolverSetup::from_settings(&settings);
    for (root, mut setup, mut humanoid, targets, bones) in &mut characters {
        if setup.solver == want.solver && setup.full_body == want.full_body {
            continue;
        }
        if setup.solver != want.solver {
            switches.0 += 1;
        }
        if setup.solver == SolverUi::Rig && want.solver != SolverUi::Rig {
            commands.entity(root).remove::<IkRig>();
            commands.remove_resource::<HeadAxis>();
            // The rig moved the head target in front of the face; put it back on the head.
            if let (Some(head), Some(bone)) = (
                targets.and_then(|t| t.head),
                bones.and_then(|b| b.get(HumanoidBone::Head)),
            ) && let (Ok(parent), Ok(at)) = (parents.get(head), globals.get(bone))
                && let Ok(parent) = globals.get(parent.parent())
                && let Ok(mut t) = transforms.get_mut(head)
            {
                t.translation = at.reparented_to(parent).translation;
            }
        }
        want.apply_to(&mut humanoid);
        *setup = want;
    }
}

/// How many times the character changed mode in place (the run summary reports it).
#[derive(Resource, Default, Clone, Copy, Debug)]
pub struct ModeSwitches(pub u32);

/// In the rig mode: once the humanoid is mapped (or set up again for this mode), spawn the hand
/// and foot targets where those bones stand (the humanoid, set up without limbs, spawned only
/// the pelvis and head ones) and put an [`IkRig`] on the character with a goal per target (the panel's settings are applied
/// by `apply_solver_settings`): the mode's stack is `[Jacobian rig]`.
fn attach_rig(
    mut commands: Commands,
    mut humanoids: Query<
        (
            Entity,
            &mut IkHumanoidTargets,
            &IkHumanoidBones,
            &SolverSetup,
        ),
        (Changed<IkHumanoidTargets>, Without<IkRig>),
    >,
    globals: Query<&GlobalTransform>,
) {
    for (entity, mut targets, bones, setup) in &mut humanoids {
        if setup.solver != SolverUi::Rig {
            continue;
        }
        let root = globals.get(entity).copied().unwrap_or_default();
        for role in [
            Role::LeftHand,
            Role::RightHand,
            Role::LeftFoot,
            Role::RightFoot,
        ] {
            let Some(bone) = bones.get(role.bone()) else {
                continue;
            };
            let Ok(at) = globals.get(bone) else {
                continue;
            };
            let mut local = at.reparented_to(&root);
            local.scale = Vec3::ONE;
            let target = commands
                .spawn((
                    Name::new(format!("rig target {}", role.key())),
                    local,
                    ChildOf(entity),
                ))
                .id();
            let slot = match role {
                Role::LeftHand => &mut targets.left_hand,
                Role::RightHand => &mut targets.right_hand,
                Role::LeftFoot => &mut targets.left_foot,
                _ => &mut targets.right_foot,
            };
            *slot = Some(target);
        }
        let mut goals = Vec::new();
        for role in Role::ALL {
            if let (Some(bone), Some(target)) = (bones.get(role.bone()), role.target(&targets)) {
                goals.push(IkGoal::position(bone, target));
            }
        }
        let mut rig = IkRig::new(goals).with_limits(IkJointLimits::Humanoid);
        rig.movable_root = bones.get(HumanoidBone::Hips).map(BoneRef::Entity);
        commands.entity(entity).insert(rig);
    }
}

/// In the rig mode, the head's look-at goal aims the face: the head's aiming axis in its own
/// frame (the character's forward) and how far to move the head target so it sits in front of
/// the face. `None` in the other modes (the full-body humanoid places its own look-at target).
pub fn head_look_at(
    setup: &SolverSetup,
    head: Option<&GlobalTransform>,
    frame: &BodyFrame,
) -> Option<(Vec3, Vec3)> {
    let head = head.filter(|_| setup.solver == SolverUi::Rig)?;
    let axis = head.rotation().inverse() * frame.forward;
    Some((axis, frame.vector(Vec3::new(0.0, 0.08, 0.8))))
}

/// Whether the balance readout applies: the full-body solver with its centre-of-mass goal on.
pub fn balance_active(setup: &SolverSetup, com: Option<&IkCenterOfMass>) -> bool {
    setup.solver == SolverUi::FullBody && com.is_some_and(|c| c.active)
}

/// The full-body rig as the panel describes it, starting from the rig the demo set up.
pub fn rig_from_ui(
    current: &IkRig,
    ui: &RigUi,
    targets: &IkHumanoidTargets,
    bones: &IkHumanoidBones,
    head_axis: Option<Vec3>,
) -> IkRig {
    let mut rig = current.clone();
    rig.weight = ui.weight;
    rig.settings = IkRigSettings {
        max_iterations: ui.max_iterations.max(1),
        position_tolerance: ui.position_tolerance_mm.max(0.001) / 1000.0,
        angle_tolerance: ui.angle_tolerance_deg.max(0.001).to_radians(),
        posture_gain: ui.posture_gain,
    };
    rig.limits = if ui.joint_limits {
        IkJointLimits::Humanoid
    } else {
        IkJointLimits::Free
    };
    rig.movable_root = ui
        .pelvis_translates
        .then(|| bones.get(HumanoidBone::Hips).map(BoneRef::Entity))
        .flatten();
    for goal in &mut rig.goals {
        let Some(role) = role_of_goal(goal, bones) else {
            continue;
        };
        let g = ui.goals[role.index()];
        goal.target = role.target(targets).filter(|_| g.enabled);
        goal.weight = g.weight;
        goal.priority = g.priority;
        goal.blend = g.blend;
        goal.kind = match (role, head_axis) {
            (Role::Head, Some(axis)) if ui.head_look_at => IkGoalKind::LookAt { axis },
            (Role::Head, _) => IkGoalKind::Rotation,
            _ if g.rotation => IkGoalKind::PositionRotation,
            _ => IkGoalKind::Position,
        };
    }
    rig
}

/// The role whose bone a rig goal moves.
fn role_of_goal(goal: &IkGoal, bones: &IkHumanoidBones) -> Option<Role> {
    let BoneRef::Entity(bone) = goal.bone else {
        return None;
    };
    Role::ALL
        .into_iter()
        .find(|r| bones.get(r.bone()) == Some(bone))
}

/// Pushes changed settings into the rig or the limbs (the humanoid's own are pushed by
/// [`switch_setup`]), and shows the handles the mode uses.
fn apply_solver_settings(
    settings: Res<DemoSettings>,
    humanoids: Query<
        (
            Entity,
            Ref<IkHumanoidTargets>,
            &IkHumanoidBones,
            &SolverSetup,
        ),
        With<Character>,
    >,
    mut rigs: Query<&mut IkRig>,
    mut limbs: Query<(&mut IkLimb, Has<IkDisabled>)>,
    mut handles: Query<(Ref<TargetHandle>, &mut Visibility)>,
    head_axis: Option<Res<HeadAxis>>,
    vr: Option<Res<crate::vr::VrMode>>,
    mut commands: Commands,
) {
    let Ok((character, targets, bones, setup)) = humanoids.single() else {
        return;
    };
    if setup.needs_set_up(&settings) {
        // `switch_setup` has not run on this change yet.
        return;
    }
    let head_changed = head_axis.as_ref().is_some_and(DetectChanges::is_changed);
    let new_handles = handles.iter().any(|(h, _)| h.is_added());
    let vr = vr.is_some_and(|v| v.enabled);
    let changed = settings.is_changed() || targets.is_changed() || head_changed || new_handles;
    if let Ok(mut rig) = rigs.get_mut(character)
        && (changed || rig.is_added())
    {
        let new = rig_from_ui(
            &rig,
            &settings.rig,
            &targets,
            bones,
            head_axis.as_ref().map(|h| h.0),
        );
        if *rig != new {
            *rig = new;
        }
    }
    if !changed {
        return;
    }
    for role in Role::ALL {
        let Some(i) = role.limb() else { continue };
        let Some(&limb_entity) = targets.limbs.get(i) else {
            continue;
        };
        let ui = settings.limbs[i];
        let Ok((mut limb, disabled)) = limbs.get_mut(limb_entity) else {
            continue;
        };
        let (flex_min, flex_max) = if ui.flex_limits {
            (3f32.to_radians(), 150f32.to_radians())
        } else {
            (0.0, core::f32::consts::PI)
        };
        let mut new = limb.clone();
        new.weight = ui.weight;
        new.rotation_weight = ui.rotation_weight;
        new.pole = role.pole(&targets).filter(|_| ui.use_pole);
        new.pole_weight = ui.pole_weight;
        new.settings.soft_reach = ui.soft_reach;
        new.settings.flex_min = flex_min;
        new.settings.flex_max = flex_max;
        if *limb != new {
            *limb = new;
        }
        // In the rig mode the IkRig drives these targets and the limbs stay off.
        // `try_`: the character (and its limbs) may be despawned this frame by a mode switch.
        match (ui.enabled && settings.solver == SolverUi::Limbs, disabled) {
            (true, true) => {
                commands.entity(limb_entity).try_remove::<IkDisabled>();
            }
            (false, false) => {
                commands.entity(limb_entity).try_insert(IkDisabled);
            }
            _ => {}
        }
    }
    for (handle, mut visibility) in &mut handles {
        // In VR mode the head and hands are the trackers; the VR body places the rest.
        let tracker =
            !handle.pole && matches!(handle.role, Role::Head | Role::LeftHand | Role::RightHand);
        let shown = settings.draw.handles
            && uses_handle(&settings, handle.role, handle.pole)
            && (!vr || tracker);
        visibility.set_if_neq(if shown {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
    }
}

/// Whether the current mode and settings use the handle of `role` (its pole if `pole`).
pub fn uses_handle(settings: &DemoSettings, role: Role, pole: bool) -> bool {
    match (settings.solver, role.limb()) {
        (SolverUi::Limbs, Some(i)) => {
            settings.limbs[i].enabled && (!pole || settings.limbs[i].use_pole)
        }
        (SolverUi::Limbs, None) => false,
        (SolverUi::Rig, _) => settings.rig.goals[role.index()].enabled,
        (SolverUi::FullBody, _) => role != Role::Head || settings.full_body.head,
    }
}

/// Whether the character is set up and its solver has written a pose.
pub fn is_solving(
    setup: &SolverSetup,
    targets: &IkHumanoidTargets,
    status: &IkStatus,
    rig: Option<&IkRig>,
    statuses: &Query<&IkStatus>,
) -> bool {
    match setup.solver {
        SolverUi::FullBody => status.ready && status.solved,
        SolverUi::Rig => rig.is_some() && status.ready && status.solved,
        SolverUi::Limbs => {
            !targets.limbs.is_empty()
                && targets
                    .limbs
                    .iter()
                    .all(|&l| statuses.get(l).is_ok_and(|s| s.ready && s.solved))
        }
    }
}

/// One goal's state after the last solve.
#[derive(Clone, Debug, Default)]
pub struct GoalState {
    /// The residual: millimetres, or degrees when `degrees` (NaN when unknown).
    pub value: f32,
    /// Whether `value` is an angle.
    pub degrees: bool,
    /// The goal is active in this mode (else it is off or has no bone).
    pub active: bool,
    /// Within the solver's tolerance.
    pub met: bool,
    /// What the panel shows ("3.2 mm", "off", …).
    pub text: String,
}

/// What the last solve reported, per goal and overall.
#[derive(Clone, Debug, Default)]
pub struct SolveState {
    /// Per goal, in [`Role::ALL`] order.
    pub goals: [GoalState; 6],
    /// One line about the solve.
    pub summary: String,
    /// Iterations of the last solve (`None` for the analytic limbs).
    pub iterations: Option<u32>,
    /// The last problem reported, if any.
    pub error: Option<String>,
}

pub(crate) fn format_value(value: f32, degrees: bool) -> String {
    if degrees {
        format!("{value:.2}°")
    } else {
        format!("{value:.2} mm")
    }
}

pub(crate) fn iterations_summary(status: &IkStatus) -> String {
    if status.solved {
        format!(
            "{} iteration{} · {}",
            status.iterations,
            if status.iterations == 1 { "" } else { "s" },
            if status.converged {
                "converged"
            } else {
                "best effort (not all goals within tolerance)"
            }
        )
    } else {
        "not solved".to_owned()
    }
}

/// Reads each goal's residual for the character's mode.
pub fn read_solve(
    settings: &DemoSettings,
    setup: &SolverSetup,
    targets: &IkHumanoidTargets,
    bones: &IkHumanoidBones,
    status: &IkStatus,
    rig: Option<&IkRig>,
    limbs: &Query<(&IkStatus, Has<IkDisabled>)>,
) -> SolveState {
    let mut state = SolveState::default();
    for g in &mut state.goals {
        g.value = f32::NAN;
        g.text = "—".to_owned();
    }
    match setup.solver {
        SolverUi::FullBody => {
            let fb = setup.full_body;
            // Residuals come in `Effector::ALL` order (hands, feet, pelvis; like `Role::ALL`),
            // then the look-at angle.
            for role in Role::ALL {
                let g = &mut state.goals[role.index()];
                g.active = role.target(targets).is_some() && bones.get(role.bone()).is_some();
                if !g.active {
                    g.text = "off".to_owned();
                    continue;
                }
                let Some(&v) = status.residuals.get(role.index()) else {
                    continue;
                };
                if !status.solved {
                    continue;
                }
                g.degrees = role == Role::Head;
                g.value = if g.degrees {
                    v.to_degrees()
                } else {
                    v * 1000.0
                };
                let tolerance = if g.degrees {
                    fb.rotation_tolerance_deg
                } else {
                    fb.position_tolerance_mm
                };
                g.met = g.value <= tolerance * 1.001;
                g.text = format_value(g.value, g.degrees);
            }
            state.summary = iterations_summary(status);
            state.iterations = Some(status.iterations);
            state.error = status.last_error.as_ref().map(ToString::to_string);
        }
        SolverUi::Rig => {
            let ui = &settings.rig;
            for (i, goal) in rig.iter().flat_map(|r| r.goals.iter()).enumerate() {
                let Some(role) = role_of_goal(goal, bones) else {
                    continue;
                };
                let degrees = matches!(goal.kind, IkGoalKind::Rotation | IkGoalKind::LookAt { .. });
                let g = &mut state.goals[role.index()];
                g.degrees = degrees;
                match (goal.target, status.residuals.get(i)) {
                    (None, _) => g.text = "off".to_owned(),
                    (Some(_), Some(&v)) if status.solved => {
                        g.active = true;
                        g.value = if degrees { v.to_degrees() } else { v * 1000.0 };
                        let tolerance = if degrees {
                            ui.angle_tolerance_deg
                        } else {
                            ui.position_tolerance_mm
                        };
                        g.met = g.value <= tolerance * 1.001;
                        g.text = format_value(g.value, degrees);
                    }
                    _ => g.active = true,
                }
            }
            state.summary = iterations_summary(status);
            state.iterations = Some(status.iterations);
            state.error = status.last_error.as_ref().map(ToString::to_string);
        }
        SolverUi::Limbs => {
            let mut reached = 0;
            let mut solving = 0;
            for role in Role::ALL {
                let g = &mut state.goals[role.index()];
                let Some(i) = role.limb() else {
                    g.text = "off".to_owned();
                    continue;
                };
                let Some((s, disabled)) = targets.limbs.get(i).and_then(|&l| limbs.get(l).ok())
                else {
                    continue;
                };
                if disabled {
                    g.text = "off".to_owned();
                } else {
                    g.active = true;
                    solving += 1;
                    if s.solved {
                        g.value = s.position_residual * 1000.0;
                        g.met = s.converged;
                        g.text = format!(
                            "{:.2} mm{}",
                            g.value,
                            if s.converged { "" } else { " (out of reach)" }
                        );
                        reached += usize::from(s.converged);
                    }
                }
                if let Some(e) = &s.last_error {
                    state.error = Some(e.to_string());
                }
            }
            state.summary =
                format!("analytic: {reached} of {solving} limbs on target, 1 iteration each");
        }
    }
    state
}

/// The lines from each goal's bone to its target (and from the elbows and knees to their poles),
/// as (from, to, is a pole) triples.
pub fn goal_lines(
    setup: &SolverSetup,
    targets: &IkHumanoidTargets,
    bones: &IkHumanoidBones,
    rig: Option<&IkRig>,
    limbs: &Query<(&IkLimb, Has<IkDisabled>)>,
    mut line: impl FnMut(Entity, Entity, bool),
) {
    let bone = |b: &BoneRef| match b {
        BoneRef::Entity(e) => Some(*e),
        BoneRef::Role(role) => bones.get(*role),
        _ => None,
    };
    if setup.solver == SolverUi::FullBody && setup.full_body.weight > 0.0 {
        // The hybrid humanoid solver's goals: each role's bone to its target (none while the
        // stage is faded out, as in VR mode).
        for role in Role::ALL {
            if let (Some(from), Some(to)) = (bones.get(role.bone()), role.target(targets)) {
                line(from, to, false);
            }
        }
    }
    for goal in rig.iter().flat_map(|r| r.goals.iter()) {
        if let (Some(from), Some(to)) = (bone(&goal.bone), goal.target) {
            line(from, to, false);
        }
    }
    for &limb_entity in &targets.limbs {
        let Ok((limb, disabled)) = limbs.get(limb_entity) else {
            continue;
        };
        if disabled {
            continue;
        }
        if let (Some(tip), Some(target)) = (bone(&limb.tip), limb.target) {
            line(tip, target, false);
        }
        if let (Some(mid), Some(pole)) = (bone(&limb.mid), limb.pole) {
            line(mid, pole, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solver_names_round_trip_and_unknown_names_are_rejected() {
        for s in [SolverUi::FullBody, SolverUi::Rig, SolverUi::Limbs] {
            assert_eq!(SolverUi::from_name(s.name()), Some(s));
        }
        assert_eq!(SolverUi::from_name("fabrik"), None);
    }

    #[test]
    fn only_the_mode_and_the_head_goal_set_the_character_up_again() {
        let settings = DemoSettings::default();
        let setup = SolverSetup::from_settings(&settings);
        assert!(!setup.needs_set_up(&settings));
        let mut live = settings.clone();
        live.full_body.weight = 0.3;
        live.full_body.max_iterations += 1;
        live.full_body.damping *= 2.0;
        assert!(
            !setup.needs_set_up(&live),
            "solver settings are applied live"
        );
        let live_setup = SolverSetup::from_settings(&live).humanoid();
        assert_eq!(live_setup.weight, 0.3);
        assert_eq!(
            live_setup.full_body_settings.max_iterations,
            settings.full_body.max_iterations + 1
        );
        let mut head = settings.clone();
        head.full_body.head = false;
        assert!(setup.needs_set_up(&head));
        let mut other = settings;
        other.solver = SolverUi::Limbs;
        assert!(setup.needs_set_up(&other));
    }

    #[test]
    fn the_rig_mode_sets_the_humanoid_up_without_limb_or_full_body_stages() {
        let mut settings = DemoSettings {
            solver: SolverUi::Rig,
            ..DemoSettings::default()
        };
        let h = SolverSetup::from_settings(&settings).humanoid();
        assert_ne!(h.solver, IkHumanoidSolver::FullBody, "no full-body stage");
        assert!(!h.arms && !h.legs && !h.poles, "no limb stages or poles");
        settings.solver = SolverUi::Limbs;
        let h = SolverSetup::from_settings(&settings).humanoid();
        assert!(h.arms && h.legs && h.poles);
    }
}
