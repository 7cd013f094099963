//! Procedurally built humanoid skeletons in several naming conventions and rest-axis styles, for
//! tests, benches and demos ([`test_rig`]).

use glam::{Quat, Vec3};

use crate::pose::BoneTransform;
use crate::skeleton::{Bone, Skeleton};

/// The bone naming convention of a [`test_rig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RigConvention {
    /// Mixamo: `mixamorig:Hips`, `Spine`, `Spine1`, `Spine2`, `LeftArm`, `LeftForeArm`,
    /// `LeftUpLeg`, `LeftLeg`, `LeftToeBase`, end bones and fingers.
    Mixamo,
    /// VRM humanoid bone names used as node names: `hips`, `upperChest`, `leftUpperArm`, …
    Vrm,
    /// `VRoid` Studio: `J_Bip_C_Hips`, `J_Bip_L_UpperArm`, `J_Bip_L_ToeBase`, under a `Root`.
    VRoid,
    /// Blender Rigify deform bones: `DEF-spine` (the pelvis) … `DEF-spine.006` (the head),
    /// `DEF-upper_arm.L` + `DEF-upper_arm.L.001`, `DEF-thigh.L`, `DEF-shin.L`, `DEF-toe.L`.
    Rigify,
    /// Unreal Engine 5 mannequin: `root`, `pelvis`, `spine_01`…`spine_05`, `neck_01`, `neck_02`,
    /// `clavicle_l`, `upperarm_l`, `lowerarm_l`, leaf twist bones, `thigh_l`, `calf_l`, `ball_l`,
    /// IK helper bones.
    Unreal,
    /// Mixed plain names: `Hips`, `LeftUpperArm`, `Right_Arm`, `L_Hand`, `R_Thigh`, with an
    /// in-line `LeftForearmTwist` between the left forearm and hand, two spine bones, no toes.
    Plain,
}

impl RigConvention {
    /// Every convention.
    pub const ALL: [Self; 6] = [
        Self::Mixamo,
        Self::Vrm,
        Self::VRoid,
        Self::Rigify,
        Self::Unreal,
        Self::Plain,
    ];
}

/// How a [`test_rig`]'s bones are oriented in the rest pose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RestAxes {
    /// Every rest rotation is the identity: local frames are aligned with model space.
    Identity,
    /// Each bone's local +Y points at its child (Blender/Mixamo style), with a bone-specific roll.
    PlusY,
    /// Each bone's local +X points at its child, with a roll.
    PlusX,
    /// Each bone's local −Z points at its child, with a roll.
    MinusZ,
}

struct Spec {
    bones: Vec<(String, Option<usize>, Vec3)>,
}

impl Spec {
    fn add(&mut self, name: &str, parent: Option<usize>, pos: Vec3) -> usize {
        self.bones.push((name.to_owned(), parent, pos));
        self.bones.len() - 1
    }
}

/// Names of one side's limb bones: shoulder, upper arm, [upper arm 2], lower arm, [lower arm 2],
/// hand, finger, upper leg, [upper leg 2], lower leg, [lower leg 2], foot, toes, toe end.
struct Limbs<'a> {
    shoulder: &'a str,
    upper_arm: [&'a str; 2],
    lower_arm: [&'a str; 2],
    twist_inline: &'a str,
    twist_leaf: &'a str,
    hand: &'a str,
    finger: &'a str,
    upper_leg: [&'a str; 2],
    lower_leg: [&'a str; 2],
    foot: &'a str,
    toes: &'a str,
    toe_end: &'a str,
}

impl<'a> Limbs<'a> {
    /// Limbs named by a plain list: shoulder, upper arm, lower arm, hand, finger, upper leg,
    /// lower leg, foot, toes and, if present, a toe-end leaf; no split or twist bones.
    fn standard(names: &'a [String]) -> Self {
        Self {
            shoulder: &names[0],
            upper_arm: [&names[1], ""],
            lower_arm: [&names[2], ""],
            twist_inline: "",
            twist_leaf: "",
            hand: &names[3],
            finger: &names[4],
            upper_leg: [&names[5], ""],
            lower_leg: [&names[6], ""],
            foot: &names[7],
            toes: &names[8],
            toe_end: names.get(9).map_or("", String::as_str),
        }
    }
}

/// Adds the bones of `names` (empty names skipped) as a chain; returns the last index.
fn chain(spec: &mut Spec, parent: usize, bones: &[(&str, Vec3)]) -> usize {
    let mut p = parent;
    for &(name, pos) in bones {
        if !name.is_empty() {
            p = spec.add(name, Some(p), pos);
        }
    }
    p
}

fn add_side(spec: &mut Spec, torso_top: usize, hips: usize, s: f32, n: &Limbs<'_>) {
    let m = |x: f32, y: f32, z: f32| Vec3::new(x * s, y, z);
    let sh = chain(spec, torso_top, &[(n.shoulder, m(0.03, 1.45, 0.02))]);
    let ua = chain(
        spec,
        sh,
        &[
            (n.upper_arm[0], m(0.17, 1.45, -0.01)),
            (n.upper_arm[1], m(0.31, 1.445, -0.025)),
        ],
    );
    let la = chain(
        spec,
        ua,
        &[
            (n.lower_arm[0], m(0.45, 1.44, -0.04)),
            (n.lower_arm[1], m(0.58, 1.44, -0.02)),
        ],
    );
    let la_main = spec
        .bones
        .iter()
        .position(|b| b.0 == n.lower_arm[0])
        .unwrap_or(la);
    if !n.twist_leaf.is_empty() {
        spec.add(n.twist_leaf, Some(la_main), m(0.58, 1.44, -0.02));
    }
    let tw = chain(spec, la, &[(n.twist_inline, m(0.60, 1.44, -0.015))]);
    let hand = chain(spec, tw, &[(n.hand, m(0.71, 1.44, 0.0))]);
    chain(spec, hand, &[(n.finger, m(0.80, 1.44, 0.005))]);
    let ul = chain(
        spec,
        hips,
        &[
            (n.upper_leg[0], m(0.09, 0.95, 0.0)),
            (n.upper_leg[1], m(0.09, 0.735, 0.01)),
        ],
    );
    let ll = chain(
        spec,
        ul,
        &[
            (n.lower_leg[0], m(0.09, 0.52, 0.02)),
            (n.lower_leg[1], m(0.09, 0.30, 0.0)),
        ],
    );
    chain(
        spec,
        ll,
        &[
            (n.foot, m(0.09, 0.08, -0.02)),
            (n.toes, m(0.09, 0.0, 0.12)),
            (n.toe_end, m(0.09, 0.0, 0.19)),
        ],
    );
}

/// A 1.8 m humanoid in T-pose (facing +Z, up +Y, its left hand toward +X, hips 1 m above the
/// origin, slightly bent elbows and knees) named in `convention`, with rest rotations in the
/// `axes` style. The bone list (fingers, end bones, helpers, split limb bones) mimics the real
/// convention closely enough to exercise [`HumanoidMap::from_skeleton`](crate::humanoid::HumanoidMap).
#[must_use]
pub fn test_rig(convention: RigConvention, axes: RestAxes) -> Skeleton {
    let mut spec = Spec { bones: Vec::new() };
    let v = Vec3::new;
    use RigConvention as C;
    // (root names, hips name, spine names, neck names, head name, head end name)
    let (pre, hips, spines, necks, head, head_end): (&[&str], &str, &[&str], &[&str], &str, &str) =
        match convention {
            C::Mixamo => (
                &[],
                "mixamorig:Hips",
                &["mixamorig:Spine", "mixamorig:Spine1", "mixamorig:Spine2"],
                &["mixamorig:Neck"],
                "mixamorig:Head",
                "mixamorig:HeadTop_End",
            ),
            C::Vrm => (
                &[],
                "hips",
                &["spine", "chest", "upperChest"],
                &["neck"],
                "head",
                "",
            ),
            C::VRoid => (
                &["Root"],
                "J_Bip_C_Hips",
                &["J_Bip_C_Spine", "J_Bip_C_Chest", "J_Bip_C_UpperChest"],
                &["J_Bip_C_Neck"],
                "J_Bip_C_Head",
                "J_Adj_C_FaceEye",
            ),
            C::Rigify => (
                &[],
                "DEF-spine",
                &["DEF-spine.001", "DEF-spine.002", "DEF-spine.003"],
                &["DEF-spine.004", "DEF-spine.005"],
                "DEF-spine.006",
                "",
            ),
            C::Unreal => (
                &["root"],
                "pelvis",
                &["spine_01", "spine_02", "spine_03", "spine_04", "spine_05"],
                &["neck_01", "neck_02"],
                "head",
                "",
            ),
            C::Plain => (
                &[],
                "Hips",
                &["Spine", "Chest"],
                &["Neck"],
                "Head",
                "Head_End",
            ),
        };
    let mut parent = None;
    for name in pre {
        parent = Some(spec.add(name, parent, Vec3::ZERO));
    }
    let hips_i = spec.add(hips, parent, v(0.0, 1.0, 0.0));
    let mut top = hips_i;
    let k = spines.len() as f32;
    for (j, name) in spines.iter().enumerate() {
        let y = 1.0 + 0.45 * (j as f32 + 1.0) / (k + 1.0) + 0.05 * (j as f32 / k);
        top = spec.add(name, Some(top), v(0.0, y, 0.01 * j as f32));
    }
    let torso_top = top;
    let mut p = torso_top;
    for (j, name) in necks.iter().enumerate() {
        p = spec.add(
            name,
            Some(p),
            v(0.0, 1.50 + 0.06 * j as f32, 0.01 * j as f32),
        );
    }
    let head_i = spec.add(head, Some(p), v(0.0, 1.62, 0.02));
    if !head_end.is_empty() {
        spec.add(head_end, Some(head_i), v(0.0, 1.80, 0.02));
    }
    if convention == C::Unreal {
        let root = 0;
        let ik = spec.add("ik_hand_root", Some(root), Vec3::ZERO);
        spec.add("ik_hand_l", Some(ik), v(0.71, 1.44, 0.0));
        spec.add("ik_hand_r", Some(ik), v(-0.71, 1.44, 0.0));
    }
    for (side, s) in [("L", 1.0f32), ("R", -1.0f32)] {
        let left = side == "L";
        let lr = |l: &'static str, r: &'static str| if left { l } else { r };
        let owned: Vec<String>;
        let names: Limbs<'_> = match convention {
            C::Mixamo => {
                owned = [
                    "Shoulder",
                    "Arm",
                    "ForeArm",
                    "Hand",
                    "HandIndex1",
                    "UpLeg",
                    "Leg",
                    "Foot",
                    "ToeBase",
                    "Toe_End",
                ]
                .iter()
                .map(|n| format!("mixamorig:{}{n}", lr("Left", "Right")))
                .collect();
                Limbs::standard(&owned)
            }
            C::Vrm => {
                owned = [
                    "Shoulder",
                    "UpperArm",
                    "LowerArm",
                    "Hand",
                    "IndexProximal",
                    "UpperLeg",
                    "LowerLeg",
                    "Foot",
                    "Toes",
                ]
                .iter()
                .map(|n| format!("{}{n}", lr("left", "right")))
                .collect();
                Limbs::standard(&owned)
            }
            C::VRoid => {
                owned = [
                    "Shoulder", "UpperArm", "LowerArm", "Hand", "Index1", "UpperLeg", "LowerLeg",
                    "Foot", "ToeBase",
                ]
                .iter()
                .map(|n| format!("J_Bip_{side}_{n}"))
                .collect();
                Limbs::standard(&owned)
            }
            C::Rigify => {
                owned = [
                    "shoulder",
                    "upper_arm",
                    "upper_arm.{S}.001",
                    "forearm",
                    "forearm.{S}.001",
                    "hand",
                    "f_index.01",
                    "thigh",
                    "thigh.{S}.001",
                    "shin",
                    "shin.{S}.001",
                    "foot",
                    "toe",
                ]
                .iter()
                .map(|n| {
                    if n.contains("{S}") {
                        format!("DEF-{}", n.replace("{S}", side))
                    } else {
                        format!("DEF-{n}.{side}")
                    }
                })
                .collect();
                Limbs {
                    shoulder: &owned[0],
                    upper_arm: [&owned[1], &owned[2]],
                    lower_arm: [&owned[3], &owned[4]],
                    twist_inline: "",
                    twist_leaf: "",
                    hand: &owned[5],
                    finger: &owned[6],
                    upper_leg: [&owned[7], &owned[8]],
                    lower_leg: [&owned[9], &owned[10]],
                    foot: &owned[11],
                    toes: &owned[12],
                    toe_end: "",
                }
            }
            C::Unreal => {
                let sl = side.to_lowercase();
                owned = [
                    "clavicle",
                    "upperarm",
                    "lowerarm",
                    "lowerarm_twist_01",
                    "hand",
                    "index_01",
                    "thigh",
                    "calf",
                    "foot",
                    "ball",
                ]
                .iter()
                .map(|n| format!("{n}_{sl}"))
                .collect();
                Limbs {
                    shoulder: &owned[0],
                    upper_arm: [&owned[1], ""],
                    lower_arm: [&owned[2], ""],
                    twist_inline: "",
                    twist_leaf: &owned[3],
                    hand: &owned[4],
                    finger: &owned[5],
                    upper_leg: [&owned[6], ""],
                    lower_leg: [&owned[7], ""],
                    foot: &owned[8],
                    toes: &owned[9],
                    toe_end: "",
                }
            }
            C::Plain => {
                owned = if left {
                    [
                        "L_Clavicle",
                        "LeftUpperArm",
                        "LeftLowerArm",
                        "LeftForearmTwist",
                        "L_Hand",
                        "LeftUpperLeg",
                        "LeftLowerLeg",
                        "LeftFoot",
                    ]
                } else {
                    [
                        "R_Clavicle",
                        "Right_Arm",
                        "Right_Forearm",
                        "",
                        "R_Hand",
                        "R_Thigh",
                        "R_Calf",
                        "Right_Foot",
                    ]
                }
                .iter()
                .map(|n| (*n).to_owned())
                .collect();
                Limbs {
                    shoulder: &owned[0],
                    upper_arm: [&owned[1], ""],
                    lower_arm: [&owned[2], ""],
                    twist_inline: &owned[3],
                    twist_leaf: "",
                    hand: &owned[4],
                    finger: "",
                    upper_leg: [&owned[5], ""],
                    lower_leg: [&owned[6], ""],
                    foot: &owned[7],
                    toes: "",
                    toe_end: "",
                }
            }
        };
        add_side(&mut spec, torso_top, hips_i, s, &names);
    }
    build(&spec, axes)
}

fn build(spec: &Spec, axes: RestAxes) -> Skeleton {
    let n = spec.bones.len();
    let local_axis = match axes {
        RestAxes::Identity => None,
        RestAxes::PlusY => Some(Vec3::Y),
        RestAxes::PlusX => Some(Vec3::X),
        RestAxes::MinusZ => Some(Vec3::NEG_Z),
    };
    let mut model_rot = vec![Quat::IDENTITY; n];
    for (i, rot) in model_rot.iter_mut().enumerate() {
        let Some(axis) = local_axis else { break };
        let pos = spec.bones[i].2;
        let child = (i + 1..n)
            .find(|&c| spec.bones[c].1 == Some(i) && spec.bones[c].2.distance(pos) > 1e-4);
        let aim = match (child, spec.bones[i].1) {
            (Some(c), _) => spec.bones[c].2 - pos,
            (None, Some(p)) => pos - spec.bones[p].2,
            (None, None) => Vec3::Y,
        };
        let aim = aim.try_normalize().unwrap_or(Vec3::Y);
        let roll = 0.37 * (i as f32) - 1.1;
        *rot = Quat::from_axis_angle(aim, roll) * Quat::from_rotation_arc(axis, aim);
    }
    let bones = spec
        .bones
        .iter()
        .enumerate()
        .map(|(i, (name, parent, pos))| {
            let rest = match *parent {
                Some(p) => {
                    let inv = model_rot[p].inverse();
                    BoneTransform::from_translation_rotation(
                        inv * (*pos - spec.bones[p].2),
                        inv * model_rot[i],
                    )
                }
                None => BoneTransform::from_translation_rotation(*pos, model_rot[i]),
            };
            Bone::new(name.clone(), *parent, rest)
        })
        .collect();
    match Skeleton::try_new(bones) {
        Ok(s) => s,
        Err(e) => unreachable!("test rig is well formed: {e}"),
    }
}

/// A random pose whose every mapped joint is inside `limits`: ball joints get a swing inside the
/// ellipse and a twist in range, hinges an angle in range, all shrunk toward the rest pose by
/// `fraction` (1 = the full range); the hips move up to `0.1 · fraction` model units and turn up
/// to `0.3 · fraction` radians. `next` must return uniform numbers in `[0, 1)`. Unmapped bones
/// keep their rest transform.
#[must_use]
pub fn random_pose_within_limits(
    skeleton: &Skeleton,
    map: &crate::humanoid::HumanoidMap,
    limits: &crate::humanoid::HumanoidLimits,
    fraction: f32,
    next: &mut impl FnMut() -> f32,
) -> crate::pose::Pose {
    use crate::limits::JointLimit;
    let mut pose = skeleton.rest_pose();
    let sym = |half: f32, next: &mut dyn FnMut() -> f32| (next() * 2.0 - 1.0) * half;
    for (role, b) in map.iter() {
        let rest = skeleton.bones()[b].rest.rotation;
        let delta = match limits.get(role) {
            JointLimit::Hinge { axis, min, max } => {
                let mid = 0.5 * (min + max);
                Quat::from_axis_angle(axis, mid + sym(0.5 * (max - min) * fraction, next))
            }
            JointLimit::SwingTwist(l) => {
                let r = next().sqrt() * fraction;
                let phi = next() * core::f32::consts::TAU;
                let swing = glam::Vec2::new(
                    l.swing_half_angles.x * r * phi.cos(),
                    l.swing_half_angles.y * r * phi.sin(),
                );
                let mid = 0.5 * (l.twist_min + l.twist_max);
                let twist = mid + sym(0.5 * (l.twist_max - l.twist_min) * fraction, next);
                l.compose(swing, twist)
            }
            JointLimit::Free if role == crate::humanoid::HumanoidBone::Hips => {
                let t = Vec3::new(sym(1.0, next), sym(1.0, next), sym(1.0, next)) * 0.1 * fraction;
                pose.translations[b] += t;
                let w = Vec3::new(sym(1.0, next), sym(1.0, next), sym(1.0, next)) * 0.3 * fraction;
                Quat::from_scaled_axis(w)
            }
            _ => Quat::IDENTITY,
        };
        pose.rotations[b] = (rest * delta).normalize();
    }
    pose
}
