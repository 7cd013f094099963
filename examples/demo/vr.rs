//! VR mode (`--vr`): the head and the two hand handles become the three trackers of an
//! [`IkVrBody`] (a stage after the humanoid's, whose weight drops to 0, so that the full-body
//! stage is not solved at all): drag them and the
//! whole body follows — pelvis from the head, lean and crouch, elbows, and feet that stay
//! planted and step. The head handle moves onto the head bone (a tracker is the pose of the
//! bone it drives). With scripted motion on (`--screenshot`), the trackers walk forward, turn
//! 90° on the spot, crouch, reach high and reach low; grabbing a handle hands control back.

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;
use transform_gizmo_bevy::GizmoTarget;

use crate::character::{BodyFrame, Character};
use crate::handles::{Role, TargetHandle};
use crate::settings::DemoSettings;
use crate::solver::{SolveState, format_value, iterations_summary};

/// Adds the VR mode when `enabled`.
pub struct VrModePlugin {
    /// Whether the character starts in VR mode.
    pub enabled: bool,
}

/// Whether the VR mode is on.
#[derive(Resource, Clone, Copy, Debug)]
pub struct VrMode {
    /// On.
    pub enabled: bool,
}

/// The VR stage entity of a character (on the character root once started).
#[derive(Component)]
struct VrStarted;

/// The scripted tracker motion: the trackers' poses at the start (character space).
#[derive(Resource)]
struct VrScript {
    tick: u32,
    home: [(Entity, Transform); 3],
}

impl Plugin for VrModePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(VrMode {
            enabled: self.enabled,
        })
        .add_systems(Update, start_vr_body)
        // After the handles' own scripted motion (in `Update`), before the IK reads targets.
        .add_systems(PostUpdate, scripted_trackers.before(IkSystems::Prepare));
    }
}

fn start_vr_body(
    mut commands: Commands,
    mode: Res<VrMode>,
    mut settings: ResMut<DemoSettings>,
    characters: Query<
        (Entity, &IkHumanoidTargets, &IkHumanoidBones),
        (With<Character>, Without<VrStarted>),
    >,
    handles: Query<&TargetHandle>,
    parents: Query<&ChildOf>,
    globals: Query<&GlobalTransform>,
    mut transforms: Query<&mut Transform>,
) {
    if !mode.enabled {
        return;
    }
    for (root, targets, bones) in &characters {
        let (Some(head), Some(left), Some(right)) =
            (targets.head, targets.left_hand, targets.right_hand)
        else {
            continue;
        };
        // Wait for the demo to decorate the targets as handles.
        if handles.get(head).is_err() {
            continue;
        }
        // The head tracker is the head bone's pose (the humanoid's head target is a look-at
        // point in front of the face).
        if let (Some(bone), Ok(parent)) = (bones.get(HumanoidBone::Head), parents.get(head))
            && let (Ok(b), Ok(p)) = (globals.get(bone), globals.get(parent.parent()))
            && let Ok(mut t) = transforms.get_mut(head)
        {
            *t = b.reparented_to(p);
            t.scale = Vec3::ONE;
        }
        // The full-body stage fades out (weight 0: not solved at all); the VR body drives
        // the whole character.
        settings.full_body.weight = 0.0;
        commands.entity(root).insert(VrStarted);
        commands.spawn((
            Name::new("VR body"),
            IkVrBody::new(head, left, right),
            IkStageOf(root),
        ));
        if settings.scripted_motion {
            settings.scripted_motion = false;
            let home =
                [head, left, right].map(|e| (e, transforms.get(e).copied().unwrap_or_default()));
            commands.insert_resource(VrScript { tick: 0, home });
        }
    }
}

fn smooth(a: f32, b: f32, t: f32) -> f32 {
    let x = ((t - a) / (b - a)).clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

/// Walk forward, turn 90° on the spot, crouch, reach high, reach low (30 ticks per second, so a
/// screenshot does not depend on the frame rate).
fn scripted_trackers(
    mut commands: Commands,
    script: Option<ResMut<VrScript>>,
    frame: Option<Res<BodyFrame>>,
    handles: Query<(&TargetHandle, Option<&GizmoTarget>)>,
    mut transforms: Query<&mut Transform>,
) {
    let (Some(mut script), Some(frame)) = (script, frame) else {
        return;
    };
    if handles
        .iter()
        .any(|(_, g)| g.is_some_and(GizmoTarget::is_active))
    {
        commands.remove_resource::<VrScript>();
        return;
    }
    script.tick += 1;
    let t = script.tick as f32 / 30.0;
    let s = frame.scale;
    let (up, fwd) = (frame.up, frame.forward);
    let walk = 0.9 * s * smooth(0.5, 3.5, t);
    let yaw = Quat::from_axis_angle(up, core::f32::consts::FRAC_PI_2 * smooth(4.0, 6.0, t));
    let crouch = 0.35 * s * (smooth(6.5, 8.0, t) - smooth(12.5, 13.5, t));
    let high = smooth(8.5, 9.5, t) - smooth(10.0, 10.8, t);
    let low = smooth(10.8, 11.8, t) - smooth(12.5, 13.0, t);
    let [(head_e, head0), (left_e, left0), (right_e, right0)] = script.home;
    let pivot = head0.translation - up * head0.translation.dot(up) + fwd * walk;
    let head_pos = pivot + up * (head0.translation.dot(up) - crouch);
    let place = |home: Transform, reach: Vec3| {
        let rel = home.translation - head0.translation;
        let relaxed = rel.lerp(reach, high.max(low));
        Transform::from_translation(head_pos + yaw * relaxed).with_rotation(yaw * home.rotation)
    };
    let side = |home: Transform| {
        let l = home.translation - head0.translation;
        l - up * l.dot(up) - fwd * l.dot(fwd)
    };
    let reach = |home: Transform| {
        let out = side(home) * 0.45;
        if high >= low {
            out + up * 0.3 * s + fwd * 0.15 * s
        } else {
            out - up * 0.95 * s + fwd * 0.35 * s
        }
    };
    let poses = [
        (
            head_e,
            Transform::from_translation(head_pos).with_rotation(yaw * head0.rotation),
        ),
        (left_e, place(left0, reach(left0))),
        (right_e, place(right0, reach(right0))),
    ];
    for (e, pose) in poses {
        if let Ok(mut t) = transforms.get_mut(e) {
            *t = pose;
        }
    }
}

/// A tracker is met within 1 mm (the VR body's own figures: head ≤ 0.69 mm, hands within reach
/// ≤ 0.14 mm).
pub const VR_TOLERANCE_MM: f32 = 1.0;

/// What the VR body did, for the readouts and the run summary: the head and each hand measured
/// on the output (the bone's position against its tracker's, after transform propagation),
/// met within [`VR_TOLERANCE_MM`]; the pelvis and the feet are the VR body's own (planted,
/// stepping), not goals. A hand whose tracker is beyond the arm's reach misses by design (the
/// head comes first).
pub fn read_vr(
    vr: &IkVrBody,
    status: &IkStatus,
    bones: &IkHumanoidBones,
    globals: &Query<&GlobalTransform>,
) -> SolveState {
    let mut state = SolveState::default();
    for role in Role::ALL {
        let g = &mut state.goals[role.index()];
        g.value = f32::NAN;
        let (tracker, bone) = match role {
            Role::Head => (vr.head, HumanoidBone::Head),
            Role::LeftHand => (vr.left_hand, HumanoidBone::LeftHand),
            Role::RightHand => (vr.right_hand, HumanoidBone::RightHand),
            _ => {
                g.text = "VR body".to_owned();
                continue;
            }
        };
        let (Some(tracker), Some(bone)) = (tracker, bones.get(bone)) else {
            g.text = "off".to_owned();
            continue;
        };
        g.active = true;
        let (Ok(t), Ok(b)) = (globals.get(tracker), globals.get(bone)) else {
            g.text = "—".to_owned();
            continue;
        };
        if !status.solved {
            g.text = "—".to_owned();
            continue;
        }
        g.value = t.translation().distance(b.translation()) * 1000.0;
        g.met = g.value <= VR_TOLERANCE_MM;
        g.text = format_value(g.value, false);
    }
    state.summary = format!("VR body · {}", iterations_summary(status));
    state.iterations = Some(status.iterations);
    state.error = status.last_error.as_ref().map(ToString::to_string);
    state
}
