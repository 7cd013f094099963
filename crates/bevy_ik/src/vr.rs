//! A VR body on a character: [`IkVrBody`] names three tracker entities (head, left and right
//! hand; optionally pelvis and feet) and the character's whole body follows them — pelvis from
//! the head, spine lean and crouch, arms with a natural elbow, feet that stay planted and step
//! (ik-core's [`VrBody`], see its module docs).
//!
//! It is sugar over [`IkCustom`]: when an `IkVrBody` appears, an `IkCustom` stage that builds a
//! `VrBody` (from the humanoid roles found on the character's bones) is inserted on the same
//! entity, and every frame, through its [`IkStageInput`] implementation, the tracker
//! entities' current global transforms (read with `TransformHelper`, so a tracker moved this
//! frame has no lag) are handed to it in the character's model space, with the frame time.
//! Any VR crate works: point the fields at its head and controller entities (or at child
//! entities of them carrying the device-to-bone offsets). Put it on the character root (a
//! one-stage character) or on a stage entity with [`IkStageOf`](crate::IkStageOf).
//!
//! Up: the floor is level in the character's model space, +Y up (Bevy's and glTF's
//! convention; [`VrBody::with_up`]), not tilted with the rest pose's posture — a rest pose
//! leaning 4.8° (the UAL mannequin) made the body climb as the head walked and miss it by
//! 76 mm (test `tests/integration/vr_gltf.rs`).
//!
//! Ground: [`IkVrBody::ground_height`] raises the feet's landing plane (flat). A grounding
//! stage can hand the `VrBody` a [`GroundProbe`](ik_core::vr::GroundProbe) instead, through
//! [`IkCharacter::custom_stage_mut::<VrBody>`](crate::IkCharacter::custom_stage_mut) (its
//! `ground` field) in a system after [`IkSystems::Prepare`](crate::IkSystems::Prepare).

use bevy::ecs::entity::Entity;
use bevy::ecs::query::Added;
use bevy::ecs::system::{Commands, Query};
use ik_core::glam::Vec3;
use ik_core::humanoid::HumanoidBone;
use ik_core::stack::StackError;
use ik_core::vr::{TrackerPose, VrBody, VrCalibration};

use crate::components::BoneRef;
pub use crate::components::vr::IkVrBody;
use crate::stage::{IkCustom, IkStageContext, IkStageInput, IkStageInputPlugin, sync_custom};

/// The roles whose bones the stage needs: every required role ([`HumanoidBone::is_required`]),
/// resolved by the character (its [`IkHumanoid`](crate::IkHumanoid)'s mapping, or a VRM file's
/// humanoid table, or names) and handed to the builder; their ancestors come along (the whole
/// spine, the shoulders). The optional roles (chest, neck, shoulders, toes) are found on the
/// character's skeleton by name and hierarchy.
const ROLES: [HumanoidBone; 15] = [
    HumanoidBone::Hips,
    HumanoidBone::Spine,
    HumanoidBone::Head,
    HumanoidBone::LeftUpperArm,
    HumanoidBone::LeftLowerArm,
    HumanoidBone::LeftHand,
    HumanoidBone::RightUpperArm,
    HumanoidBone::RightLowerArm,
    HumanoidBone::RightHand,
    HumanoidBone::LeftFoot,
    HumanoidBone::RightFoot,
    HumanoidBone::LeftLowerLeg,
    HumanoidBone::RightLowerLeg,
    HumanoidBone::LeftUpperLeg,
    HumanoidBone::RightUpperLeg,
];

pub(crate) fn register(app: &mut bevy::app::App) {
    app.register_type::<IkVrBody>()
        .add_plugins(IkStageInputPlugin::<IkVrBody>::new());
}

/// Inserts the `IkCustom` stage that builds a [`VrBody`] next to each new [`IkVrBody`].
pub(crate) fn add_vr_stages(
    mut commands: Commands,
    added: Query<(Entity, &IkVrBody, Option<&IkCustom>), Added<IkVrBody>>,
) {
    for (entity, vr, custom) in &added {
        let roles: Vec<BoneRef> = ROLES.iter().map(|&r| BoneRef::Role(r)).collect();
        let stage = IkCustom::new(roles, |skeleton, bones| {
            let map = crate::behaviours::map_with(skeleton, &ROLES, bones);
            // The character's model space is Bevy's (and glTF's): +Y is up.
            VrBody::with_up(skeleton, &map, Vec3::Y).map_err(StackError::from)
        })
        .with_key(())
        .with_weight(vr.weight);
        sync_custom(&mut commands, entity, custom, stage);
    }
}

/// Hands each VR body its trackers (model space), the frame time and the calibration.
impl IkStageInput for IkVrBody {
    type Stage = VrBody;
    type Data = &'static Self;

    fn apply(vr: &Self, body: &mut VrBody, cx: &IkStageContext) {
        let read = |e: Option<Entity>| -> Option<TrackerPose> {
            let t = cx.in_model_space(e?)?;
            Some(TrackerPose::new(t.translation, t.rotation))
        };
        let (Some(head), Some(left), Some(right)) =
            (read(vr.head), read(vr.left_hand), read(vr.right_hand))
        else {
            return;
        };
        body.trackers.head = head;
        body.trackers.left_hand = left;
        body.trackers.right_hand = right;
        body.trackers.pelvis = read(vr.pelvis);
        body.trackers.left_foot = read(vr.left_foot);
        body.trackers.right_foot = read(vr.right_foot);
        body.dt = cx.delta_secs();
        body.calibration = match vr.player_head_height {
            Some(h) => VrCalibration::from_head_height(body, h).unwrap_or_default(),
            // Trackers already in the avatar's model space and proportions.
            None => VrCalibration {
                origin: Some(Vec3::ZERO),
                ..VrCalibration::default()
            },
        };
        body.ground_offset = vr.ground_height;
    }

    fn weight(vr: &&Self) -> Option<f32> {
        Some(vr.weight)
    }
}
