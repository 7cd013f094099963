//! Humanoid bone-name recognition and skeleton mapping across naming conventions and rest-axis
//! styles.

use glam::{Quat, Vec3};
use ik_core::humanoid::{
    BodyFrame, HumanoidBone as B, HumanoidLimits, HumanoidMap, HumanoidMasses, RestAxes,
    RigConvention, test_rig,
};
use ik_core::limits::JointLimit;
use ik_core::{Bone, BoneTransform, Skeleton};

const AXES: [RestAxes; 4] = [
    RestAxes::Identity,
    RestAxes::PlusY,
    RestAxes::PlusX,
    RestAxes::MinusZ,
];

#[test]
fn recognises_every_convention() {
    let table: &[(&str, B)] = &[
        // Mixamo
        ("mixamorig:Hips", B::Hips),
        ("mixamorig:Spine", B::Spine),
        ("mixamorig:Spine2", B::Spine),
        ("mixamorig:Neck", B::Neck),
        ("mixamorig:Head", B::Head),
        ("mixamorig:LeftShoulder", B::LeftShoulder),
        ("mixamorig:LeftArm", B::LeftUpperArm),
        ("mixamorig:LeftForeArm", B::LeftLowerArm),
        ("mixamorig:RightHand", B::RightHand),
        ("mixamorig:LeftUpLeg", B::LeftUpperLeg),
        ("mixamorig:LeftLeg", B::LeftLowerLeg),
        ("mixamorig:RightFoot", B::RightFoot),
        ("mixamorig:LeftToeBase", B::LeftToes),
        ("mixamorig1:RightArm", B::RightUpperArm),
        ("mixamorig_LeftForeArm", B::LeftLowerArm),
        // VRM and VRoid
        ("hips", B::Hips),
        ("upperChest", B::UpperChest),
        ("chest", B::Chest),
        ("leftUpperArm", B::LeftUpperArm),
        ("rightLowerArm", B::RightLowerArm),
        ("leftUpperLeg", B::LeftUpperLeg),
        ("rightLowerLeg", B::RightLowerLeg),
        ("leftToes", B::LeftToes),
        ("rightShoulder", B::RightShoulder),
        ("J_Bip_C_Hips", B::Hips),
        ("J_Bip_C_UpperChest", B::UpperChest),
        ("J_Bip_L_UpperArm", B::LeftUpperArm),
        ("J_Bip_R_LowerArm", B::RightLowerArm),
        ("J_Bip_L_ToeBase", B::LeftToes),
        ("J_Bip_R_Shoulder", B::RightShoulder),
        // Blender / Rigify
        ("upper_arm.L", B::LeftUpperArm),
        ("forearm.R", B::RightLowerArm),
        ("thigh.L", B::LeftUpperLeg),
        ("shin.R", B::RightLowerLeg),
        ("DEF-upper_arm.L", B::LeftUpperArm),
        ("DEF-forearm.L.001", B::LeftLowerArm),
        ("DEF-shoulder.R", B::RightShoulder),
        ("DEF-toe.L", B::LeftToes),
        ("spine.003", B::Spine),
        ("hand.L", B::LeftHand),
        // Unreal
        ("pelvis", B::Hips),
        ("upperarm_l", B::LeftUpperArm),
        ("lowerarm_r", B::RightLowerArm),
        ("thigh_l", B::LeftUpperLeg),
        ("calf_r", B::RightLowerLeg),
        ("spine_01", B::Spine),
        ("spine_05", B::Spine),
        ("neck_01", B::Neck),
        ("clavicle_l", B::LeftShoulder),
        ("ball_r", B::RightToes),
        ("foot_l", B::LeftFoot),
        ("lowerarm_twist_01_l", B::LeftLowerArmTwist),
        // Plain and odd spellings
        ("LeftUpperArm", B::LeftUpperArm),
        ("Left_Arm", B::LeftUpperArm),
        ("L_Hand", B::LeftHand),
        ("LHand", B::LeftHand),
        ("R Hand", B::RightHand),
        ("left-foot", B::LeftFoot),
        ("LEFT_UPPER_ARM", B::LeftUpperArm),
        ("leftupperarm", B::LeftUpperArm),
        ("RIGHTFOOT", B::RightFoot),
        ("Bip01 L Forearm", B::LeftLowerArm),
        ("Bip01 Pelvis", B::Hips),
        ("CC_Base_R_Upperarm", B::RightUpperArm),
        ("Armature:LeftHip", B::LeftUpperLeg),
        ("LeftForearmTwist", B::LeftLowerArmTwist),
    ];
    for &(name, role) in table {
        assert_eq!(B::from_bone_name(name), Some(role), "{name}");
    }
}

#[test]
fn rejects_fingers_ends_helpers_and_conflicts() {
    for name in [
        "LeftHandIndex1",
        "mixamorig:LeftHandThumb2",
        "mixamorig:LeftToe_End",
        "mixamorig:HeadTop_End",
        "upperarm_twist_01_l",
        "thigh_twist_01_r",
        "ik_hand_l",
        "ik_hand_root",
        "ORG-upper_arm.L",
        "MCH-forearm_ik.L",
        "root",
        "Armature",
        "J_Adj_L_FaceEye",
        "J_Sec_L_Bust1",
        "f_index.01.L",
        "L_R_Hand",
        "C_L_Hand",
        "LeftArmRoll_End",
        "Hand",
        "Left",
        "",
        "::",
        "Bip01",
        "leftIndexProximal",
    ] {
        assert_eq!(B::from_bone_name(name), None, "{name:?}");
    }
}

fn check_map(conv: RigConvention, axes: RestAxes) {
    let s = test_rig(conv, axes);
    let (map, report) = HumanoidMap::from_skeleton(&s);
    assert!(report.is_complete(), "{conv:?}: {report:?}");
    map.validate(&s).unwrap();
    let name = |r: B| s.bones()[map.get(r).unwrap()].name.as_str();
    let expect: &[(B, &str)] = match conv {
        RigConvention::Mixamo => &[
            (B::Hips, "mixamorig:Hips"),
            (B::Spine, "mixamorig:Spine"),
            (B::Chest, "mixamorig:Spine1"),
            (B::UpperChest, "mixamorig:Spine2"),
            (B::LeftUpperArm, "mixamorig:LeftArm"),
            (B::RightLowerLeg, "mixamorig:RightLeg"),
            (B::LeftToes, "mixamorig:LeftToeBase"),
            (B::LeftHand, "mixamorig:LeftHand"),
        ],
        RigConvention::Vrm => &[
            (B::Chest, "chest"),
            (B::UpperChest, "upperChest"),
            (B::LeftToes, "leftToes"),
        ],
        RigConvention::VRoid => &[
            (B::Hips, "J_Bip_C_Hips"),
            (B::UpperChest, "J_Bip_C_UpperChest"),
            (B::Head, "J_Bip_C_Head"),
        ],
        RigConvention::Rigify => &[
            (B::Hips, "DEF-spine"),
            (B::Spine, "DEF-spine.001"),
            (B::Chest, "DEF-spine.002"),
            (B::UpperChest, "DEF-spine.003"),
            (B::Neck, "DEF-spine.004"),
            (B::Head, "DEF-spine.006"),
            (B::LeftUpperArm, "DEF-upper_arm.L"),
            (B::LeftLowerArm, "DEF-forearm.L"),
            (B::RightLowerLeg, "DEF-shin.R"),
        ],
        RigConvention::Unreal => &[
            (B::Hips, "pelvis"),
            (B::Spine, "spine_01"),
            (B::Chest, "spine_03"),
            (B::UpperChest, "spine_05"),
            (B::Neck, "neck_01"),
            (B::LeftShoulder, "clavicle_l"),
            (B::LeftLowerArmTwist, "lowerarm_twist_01_l"),
            (B::LeftHand, "hand_l"),
            (B::RightToes, "ball_r"),
        ],
        RigConvention::Plain => &[
            (B::Spine, "Spine"),
            (B::Chest, "Chest"),
            (B::RightUpperArm, "Right_Arm"),
            (B::RightLowerArm, "Right_Forearm"),
            (B::LeftHand, "L_Hand"),
            (B::LeftLowerArmTwist, "LeftForearmTwist"),
            (B::RightUpperLeg, "R_Thigh"),
            (B::RightLowerLeg, "R_Calf"),
        ],
    };
    for &(role, n) in expect {
        assert_eq!(name(role), n, "{conv:?} {role}");
    }
}

#[test]
fn maps_every_convention_and_axis_style() {
    for conv in RigConvention::ALL {
        for axes in AXES {
            check_map(conv, axes);
        }
    }
    let s = test_rig(RigConvention::Plain, RestAxes::PlusY);
    let (map, report) = HumanoidMap::from_skeleton(&s);
    assert!(map.get(B::UpperChest).is_none());
    assert!(report.missing_optional.contains(&B::UpperChest));
    assert!(report.missing_optional.contains(&B::LeftToes));
    assert!(report.missing_optional.contains(&B::RightLowerArmTwist));
}

#[test]
fn reports_missing_required_bones() {
    let bone = |n: &str, p: Option<usize>, y: f32| {
        Bone::new(
            n,
            p,
            BoneTransform::from_translation(Vec3::new(0.0, y, 0.0)),
        )
    };
    let s = Skeleton::try_new(vec![
        bone("Hips", None, 1.0),
        bone("Spine", Some(0), 0.2),
        bone("Head", Some(1), 0.4),
    ])
    .unwrap();
    let (map, report) = HumanoidMap::from_skeleton(&s);
    assert_eq!(map.get(B::Hips), Some(0));
    assert!(report.missing_required.contains(&B::LeftHand));
    assert!(report.missing_required.contains(&B::RightUpperLeg));
    assert!(!report.is_complete());
    assert!(map.validate(&s).is_err());
}

/// The body frame, hinge and swing axes are anatomical in model space whatever the bone axes.
#[test]
fn limits_follow_the_body_not_the_bone_axes() {
    for axes in AXES {
        let s = test_rig(RigConvention::Mixamo, axes);
        let (map, _) = HumanoidMap::from_skeleton(&s);
        let frame = BodyFrame::from_rest(&s, &map).unwrap();
        assert!(frame.up.dot(Vec3::Y) > 0.99, "{axes:?} {frame:?}");
        assert!(frame.left.dot(Vec3::X) > 0.99, "{axes:?} {frame:?}");
        assert!(frame.forward.dot(Vec3::Z) > 0.99, "{axes:?} {frame:?}");
        let limits = HumanoidLimits::anatomical(&s, &map).unwrap();
        let model = s.rest_model_transforms();
        let bend = |joint: B, tip: B| {
            let b = map.get(joint).unwrap();
            let JointLimit::Hinge { axis, min, max } = limits.get(joint) else {
                panic!("{joint} is a hinge")
            };
            assert!(min.abs() < 1e-6 && (max.to_degrees() - 150.0).abs() < 1e-3);
            let t = map.get(tip).unwrap();
            let mut pose = s.rest_pose();
            pose.rotations[b] =
                s.bones()[b].rest.rotation * Quat::from_axis_angle(axis, 60f32.to_radians());
            s.model_transforms(&pose)[t].translation - model[t].translation
        };
        for (knee, foot) in [
            (B::LeftLowerLeg, B::LeftFoot),
            (B::RightLowerLeg, B::RightFoot),
        ] {
            // Bending the knee moves the foot backward (−Z) and up.
            let moved = bend(knee, foot);
            assert!(
                moved.z < -0.2 && moved.y > 0.1,
                "{axes:?} knee moved foot by {moved}"
            );
        }
        for (elbow, hand) in [
            (B::LeftLowerArm, B::LeftHand),
            (B::RightLowerArm, B::RightHand),
        ] {
            // Flexion brings the hand forward (+Z).
            let moved = bend(elbow, hand);
            assert!(moved.z > 0.15, "{axes:?} elbow moved hand by {moved}");
        }
        for role in [
            B::Spine,
            B::LeftUpperArm,
            B::LeftUpperLeg,
            B::Head,
            B::RightFoot,
        ] {
            let JointLimit::SwingTwist(l) = limits.get(role) else {
                panic!("{role} is a ball")
            };
            let b = map.get(role).unwrap();
            let dir_model = model[b].rotation * l.twist_axis;
            let swing_model = model[b].rotation * l.swing_axis;
            assert!(l.twist_axis.dot(l.swing_axis).abs() < 1e-4);
            match role {
                B::Spine | B::Head => assert!(dir_model.dot(Vec3::Y) > 0.9, "{role} {dir_model}"),
                B::LeftUpperArm => assert!(dir_model.dot(Vec3::X) > 0.9),
                B::LeftUpperLeg => assert!(dir_model.dot(Vec3::NEG_Y) > 0.9),
                _ => {}
            }
            // Spine and legs flex about the body's left axis, arms swing about forward.
            let expected = if role == B::LeftUpperArm {
                Vec3::Z
            } else {
                Vec3::X
            };
            assert!(
                swing_model.dot(expected).abs() > 0.9,
                "{axes:?} {role} swing {swing_model}"
            );
        }
    }
}

#[test]
fn de_leva_masses_sum_to_total() {
    for conv in RigConvention::ALL {
        let s = test_rig(conv, RestAxes::PlusY);
        let (map, _) = HumanoidMap::from_skeleton(&s);
        let mut m = HumanoidMasses::de_leva(70.0, &map);
        assert!((m.total() - 70.0).abs() < 1e-3, "{conv:?} {}", m.total());
        assert!((m.get(B::LeftUpperLeg) - 0.1416 * 70.0).abs() < 1e-4);
        m.set(B::Head, f32::NAN);
        assert_eq!(m.get(B::Head), 0.0);
    }
}
