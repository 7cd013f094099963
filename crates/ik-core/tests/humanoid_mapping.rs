//! Humanoid bone-name recognition and skeleton mapping across naming conventions and rest-axis
//! styles.

use glam::{Quat, Vec3};
use ik_core::humanoid::{
    BodyFrame, HumanoidBone as B, HumanoidLimits, HumanoidMap, HumanoidMasses,
};
use ik_core::limits::JointLimit;
use ik_core::{Bone, BoneTransform, Skeleton};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

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

// ---------------------------------------------------------------------------------------------
// Real rigs (tables in `tests/data/real_rigs.txt`, extracted from CC0 characters by others),
// exporter prefixes and suffixes, control bones, detached feet.
// ---------------------------------------------------------------------------------------------

mod real {
    use glam::{Quat, Vec3};
    use ik_core::humanoid::{
        FullBodySolver, HumanoidBone as B, HumanoidLimits, HumanoidMap, MappingOptions,
        MappingReport, MappingSource, PassedOverReason, UnmappedReason,
    };
    use ik_core::{Bone, BoneTransform, Skeleton};
    use ik_test_rigs::{RestAxes, RigConvention, random_pose_within_limits, test_rig};

    /// A rig from the data file: its skeleton (every scene node) and per-node skin flags.
    pub struct Rig {
        pub file: String,
        pub skeleton: Skeleton,
        pub skinned: Vec<bool>,
    }

    pub fn rigs() -> Vec<Rig> {
        let text = include_str!("data/real_rigs.txt");
        let mut out: Vec<(String, Vec<Bone>, Vec<bool>)> = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let f: Vec<&str> = line.split('\t').collect();
            if f[0] == "rig" {
                out.push((f[1].to_owned(), Vec::new(), Vec::new()));
                continue;
            }
            let v = |s: &str| -> Vec<f32> { s.split(' ').map(|x| x.parse().unwrap()).collect() };
            let (t, q, sc) = (v(f[3]), v(f[4]), v(f[5]));
            let rig = out.last_mut().expect("a rig header first");
            let parent = (f[2] != "-").then(|| f[2].parse().unwrap());
            let rest = BoneTransform {
                translation: Vec3::new(t[0], t[1], t[2]),
                rotation: Quat::from_xyzw(q[0], q[1], q[2], q[3]),
                scale: Vec3::new(sc[0], sc[1], sc[2]),
            };
            rig.1.push(Bone::new(f[0], parent, rest));
            rig.2.push(f[6] == "1");
        }
        out.into_iter()
            .map(|(file, bones, skinned)| Rig {
                file,
                skeleton: Skeleton::try_new(bones).expect("real rigs are valid skeletons"),
                skinned,
            })
            .collect()
    }

    fn rig(file: &str) -> Rig {
        rigs()
            .into_iter()
            .find(|r| r.file == file)
            .expect("rig in data")
    }

    fn name_of(s: &Skeleton, map: &HumanoidMap, role: B) -> Option<String> {
        map.get(role).map(|b| s.bones()[b].name.clone())
    }

    /// The report is consistent with the map: every role once, mapped or unmapped.
    fn check_report(s: &Skeleton, map: &HumanoidMap, report: &MappingReport) {
        assert_eq!(report.mapped.len() + report.unmapped.len(), B::COUNT);
        for m in &report.mapped {
            assert_eq!(map.get(m.role), Some(m.bone));
            assert_eq!(s.bones()[m.bone].name, m.bone_name);
        }
        for u in &report.unmapped {
            assert_eq!(map.get(u.role), None);
            assert_eq!(u.required, u.role.is_required());
        }
        let text = report.to_string();
        for m in &report.mapped {
            assert!(text.contains(&format!("`{}`", m.bone_name)), "{text}");
        }
        assert!(text.starts_with(&report.summary()));
    }

    /// Solves the full body from the rest pose toward the effector poses of a random pose
    /// within limits with `solve_cold` (a pose unrelated to the goals: restarts allowed; a
    /// tracking `solve` turns no joint more than the per-frame bound) and checks the goals are
    /// met (measured by FK) and the pose is finite.
    fn solves(s: &Skeleton, map: &HumanoidMap, label: &str) {
        let mut solver = FullBodySolver::new(s, map).unwrap_or_else(|e| panic!("{label}: {e}"));
        let limits = HumanoidLimits::anatomical(s, map).unwrap();
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32
        };
        let target_pose = random_pose_within_limits(s, map, &limits, 0.5, &mut next);
        let goals = solver.goals_at_pose(s, &target_pose);
        let mut pose = s.rest_pose();
        let report = solver.solve_cold(s, &mut pose, &goals).unwrap();
        assert!(pose.is_finite(), "{label}");
        let size = s
            .rest_model_transforms()
            .iter()
            .map(|m| m.translation.length())
            .fold(0.0, f32::max);
        let fk = s.model_transforms(&pose);
        for (g, &b) in goals.effectors.iter().zip(&solver.effector_bones()) {
            let err = fk[b].translation.distance(g.position);
            assert!(
                err < 2e-3 * size,
                "{label}: effector `{}` misses by {err} (size {size}); {report:?}",
                s.bones()[b].name
            );
        }
    }

    #[test]
    fn real_rigs_map_and_solve_or_say_why() {
        for rig in rigs() {
            let s = &rig.skeleton;
            for hint in [false, true] {
                let options = if hint {
                    MappingOptions::default().with_skinned(rig.skinned.clone())
                } else {
                    MappingOptions::default()
                };
                let (map, report) = HumanoidMap::from_skeleton_with(s, &options);
                let label = format!("{} (skin hints: {hint})", rig.file);
                check_report(s, &map, &report);
                let n = |r| name_of(s, &map, r);
                match rig.file.as_str() {
                    "kaykit_mannequin.glb" => {
                        assert!(report.is_complete(), "{label}\n{report}");
                        assert_eq!(n(B::Head).as_deref(), Some("head"));
                        assert_eq!(n(B::LeftHand).as_deref(), Some("wrist.l"));
                        assert_eq!(n(B::RightFoot).as_deref(), Some("foot.r"));
                        assert_eq!(n(B::Hips).as_deref(), Some("hips"));
                    }
                    "ual_mannequin_f.glb" => {
                        assert!(report.is_complete(), "{label}\n{report}");
                        assert_eq!(n(B::Hips).as_deref(), Some("pelvis"));
                        assert_eq!(n(B::Head).as_deref(), Some("Head"));
                        assert_eq!(n(B::LeftToes).as_deref(), Some("ball_l"));
                        assert_eq!(n(B::RightShoulder).as_deref(), Some("clavicle_r"));
                    }
                    "robot_expressive.glb" => {
                        // Mesh nodes share the joints' names: the joints (nearer the root) win.
                        assert!(report.is_complete(), "{label}\n{report}");
                        for side in ["L", "R"] {
                            let (foot, leg) = if side == "L" {
                                (B::LeftFoot, B::LeftLowerLeg)
                            } else {
                                (B::RightFoot, B::RightLowerLeg)
                            };
                            let end = map.get(foot).unwrap();
                            assert_eq!(s.bones()[end].name, format!("LowerLeg.{side}_end"));
                            assert_eq!(s.parent(end), map.get(leg));
                            let m = report.mapped.iter().find(|m| m.role == foot).unwrap();
                            let MappingSource::LowerLegEnd { detached_foot } = m.source else {
                                panic!("{label}: {m:?}");
                            };
                            assert_eq!(s.bones()[detached_foot].name, format!("Foot.{side}"));
                            assert!(report.passed_over.iter().any(|p| p.bone == detached_foot
                                && p.reason == PassedOverReason::DetachedControl));
                        }
                        let hand = n(B::LeftHand).unwrap();
                        assert!(hand.starts_with("Palm"), "{hand}");
                        assert_eq!(n(B::Head).as_deref(), Some("Head"));
                        assert_eq!(s.parent(map.get(B::Head).unwrap()), map.get(B::Neck));
                    }
                    "quaternius_worker.gltf" => {
                        // No bone marks the ankle: said clearly, not failed silently.
                        assert!(!report.is_complete());
                        assert_eq!(report.missing_required, [B::LeftFoot, B::RightFoot]);
                        for (role, side) in [(B::LeftFoot, "L"), (B::RightFoot, "R")] {
                            let u = report.unmapped.iter().find(|u| u.role == role).unwrap();
                            assert_eq!(
                                u.reason,
                                UnmappedReason::DetachedControlBone {
                                    bone: s.find(&format!("Foot.{side}")).unwrap(),
                                    bone_name: format!("Foot.{side}"),
                                    parent_name: "Root".into(),
                                    lower_leg: s.find(&format!("LowerLeg.{side}")).unwrap(),
                                    lower_leg_name: format!("LowerLeg.{side}"),
                                },
                                "{label}"
                            );
                        }
                        let text = report.to_string();
                        assert!(text.contains("detached IK control bone"), "{text}");
                        assert_eq!(n(B::LeftHand).as_deref(), Some("Wrist.L"));
                        assert_eq!(n(B::LeftLowerLeg).as_deref(), Some("LowerLeg.L"));
                    }
                    other => panic!("unexpected rig {other}"),
                }
                if report.is_complete() {
                    assert!(map.validate(s).is_ok(), "{label}");
                    solves(s, &map, &label);
                }
            }
        }
    }

    /// Renames the bones of a test rig by role (`rename(role)`), the others by `other(name)`.
    fn renamed(
        s: &Skeleton,
        rename: impl Fn(B) -> String,
        other: impl Fn(&str) -> String,
    ) -> Skeleton {
        let (map, report) = HumanoidMap::from_skeleton(s);
        assert!(report.is_complete());
        let bones = s
            .bones()
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let name = map.role_of(i).map_or_else(|| other(&b.name), &rename);
                Bone::new(name, b.parent, b.rest)
            })
            .collect();
        Skeleton::try_new(bones).unwrap()
    }

    /// Blender-style names of the VRM 0.x export (`upper_arm.l_Armature`).
    fn vrm0_blender_name(role: B) -> String {
        let side = role.side().map_or("", |s| match s {
            ik_core::humanoid::Side::Left => ".l",
            ik_core::humanoid::Side::Right => ".r",
        });
        let base = match role.on(ik_core::humanoid::Side::Left) {
            B::Hips => "pelvis",
            B::Spine => "spine",
            B::Chest => "chest",
            B::UpperChest => "upper_chest",
            B::Neck => "neck",
            B::Head => "head",
            B::LeftShoulder => "shoulder",
            B::LeftUpperArm => "upper_arm",
            B::LeftLowerArm => "forearm",
            B::LeftLowerArmTwist => "forearm_twist",
            B::LeftHand => "hand",
            B::LeftUpperLeg => "thigh",
            B::LeftLowerLeg => "shin",
            B::LeftFoot => "foot",
            B::LeftToes => "toe",
            _ => unreachable!(),
        };
        format!("{base}{side}_Armature")
    }

    #[test]
    fn vrm0_blender_armature_suffix_maps_every_role() {
        for axes in [RestAxes::PlusY, RestAxes::MinusZ] {
            let s = renamed(
                &test_rig(RigConvention::Vrm, axes),
                vrm0_blender_name,
                |n| format!("{n}_Armature"),
            );
            let (map, report) = HumanoidMap::from_skeleton(&s);
            check_report(&s, &map, &report);
            assert!(report.is_complete(), "{report}");
            for role in B::ALL {
                if let Some(b) = map.get(role) {
                    assert_eq!(s.bones()[b].name, vrm0_blender_name(role), "{role}");
                }
            }
            for role in [B::Hips, B::Head, B::LeftUpperArm, B::RightFoot, B::LeftHand] {
                assert!(map.get(role).is_some(), "{role}\n{report}");
            }
            solves(&s, &map, "VRM 0.x Blender names");
        }
    }

    #[test]
    fn vrm_table_maps_names_that_match_no_convention() {
        let rig = test_rig(RigConvention::Vrm, RestAxes::MinusZ);
        let (truth, _) = HumanoidMap::from_skeleton(&rig);
        // Names no convention knows: only the table can map them.
        let s = renamed(
            &rig,
            |r| format!("Node{:03}", r.index() * 7 + 1),
            |n| format!("Node{}", n.len() * 13),
        );
        let (by_name, report) = HumanoidMap::from_skeleton(&s);
        assert_eq!(by_name.iter().count(), 0, "{report}");
        // The table as a VRM file gives it: VRM bone names to node indices.
        let table: Vec<(B, usize)> = truth
            .iter()
            .map(|(r, b)| (B::from_vrm_name(r.vrm_name()).unwrap(), b))
            .collect();
        let (map, report) = HumanoidMap::from_table(&s, &table, &MappingOptions::default());
        check_report(&s, &map, &report);
        assert!(report.is_complete(), "{report}");
        assert_eq!(map, truth);
        assert!(
            report
                .mapped
                .iter()
                .all(|m| m.source == MappingSource::Table)
        );
        assert!(
            report.summary().contains("from the table"),
            "{}",
            report.summary()
        );
        solves(&s, &map, "VRM table");

        // A wrong entry is reported, an out-of-range one ignored, a missing one filled by name.
        let mut bad = table.clone();
        bad.retain(|&(r, _)| r != B::LeftHand && r != B::Head);
        bad.push((B::LeftHand, truth.get(B::RightHand).unwrap()));
        bad.push((B::Neck, 10_000));
        let mut bones = s.bones().to_vec();
        bones[truth.get(B::Head).unwrap()].name = "Head".into();
        let s2 = Skeleton::try_new(bones).unwrap();
        let (map, report) = HumanoidMap::from_table(&s2, &bad, &MappingOptions::default());
        check_report(&s2, &map, &report);
        assert_eq!(map.get(B::LeftHand), None);
        let u = report
            .unmapped
            .iter()
            .find(|u| u.role == B::LeftHand)
            .unwrap();
        assert!(
            matches!(u.reason, UnmappedReason::NotBelowParent { .. }),
            "{report}"
        );
        assert_eq!(map.get(B::Head), truth.get(B::Head));
        let head = report.mapped.iter().find(|m| m.role == B::Head).unwrap();
        assert_eq!(head.source, MappingSource::Name);
        assert_eq!(map.get(B::Neck), truth.get(B::Neck));
        assert!(B::from_vrm_name("leftEye").is_none());
    }

    #[test]
    fn b_prefix_and_numbered_suffixes_map() {
        let s = renamed(
            &test_rig(RigConvention::Vrm, RestAxes::PlusX),
            |role| {
                let vrm = role.vrm_name();
                let pascal = vrm[..1].to_uppercase() + &vrm[1..];
                format!("b_{pascal}_{:02}", role.index() + 3)
            },
            |n| format!("b_{n}_99"),
        );
        let (map, report) = HumanoidMap::from_skeleton(&s);
        check_report(&s, &map, &report);
        assert!(report.is_complete(), "{report}");
        assert_eq!(
            name_of(&s, &map, B::LeftUpperArm).as_deref(),
            Some(format!("b_LeftUpperArm_{:02}", B::LeftUpperArm.index() + 3).as_str())
        );
        assert_eq!(
            name_of(&s, &map, B::Hips).as_deref(),
            Some(format!("b_Hips_{:02}", B::Hips.index() + 3).as_str())
        );
    }

    /// Adds bones to a skeleton (each `(name, parent name, offset)`), returning it and the
    /// per-bone skinned flags (added bones unskinned).
    fn with_extra(s: &Skeleton, extra: &[(&str, Option<&str>, Vec3)]) -> (Skeleton, Vec<bool>) {
        let mut bones = s.bones().to_vec();
        for (name, parent, offset) in extra {
            let p = parent.map(|p| s.find(p).expect("parent"));
            bones.push(Bone::new(
                *name,
                p,
                BoneTransform::from_translation(*offset),
            ));
        }
        let skinned = (0..bones.len()).map(|i| i < s.len()).collect();
        (Skeleton::try_new(bones).unwrap(), skinned)
    }

    #[test]
    fn control_bones_do_not_shadow_deform_bones() {
        let ual = rig("ual_mannequin_f.glb");
        let up = Vec3::new(0.0, 1.6, 0.0);
        // An upper-case `HEAD` control under the root, hand and foot IK controls inside the
        // skeleton, and a `head` helper beside the real head.
        let (s, skinned) = with_extra(
            &ual.skeleton,
            &[
                ("HEAD", Some("root"), up),
                ("hand_l", Some("root"), Vec3::X),
                ("foot_r", Some("pelvis"), Vec3::Z * 0.1),
                ("upperarm_l", Some("spine_01"), Vec3::X * 0.1),
            ],
        );
        for options in [
            MappingOptions::default(),
            MappingOptions::default().with_skinned(skinned.clone()),
        ] {
            let (map, report) = HumanoidMap::from_skeleton_with(&s, &options);
            check_report(&s, &map, &report);
            assert!(report.is_complete(), "{report}");
            let pick = |r| name_of(&s, &map, r).unwrap();
            let real = |r| map.get(r).unwrap() < ual.skeleton.len();
            assert_eq!(pick(B::Head), "Head");
            for r in [B::Head, B::LeftHand, B::RightFoot, B::LeftUpperArm] {
                assert!(real(r), "{r}: {}\n{report}", pick(r));
            }
            let passed = |name: &str| {
                report
                    .passed_over
                    .iter()
                    .find(|p| p.bone_name == name && p.bone >= ual.skeleton.len())
                    .map(|p| p.reason)
            };
            assert!(
                matches!(passed("HEAD"), Some(PassedOverReason::OffChain { .. })),
                "{report}"
            );
            assert!(
                passed("hand_l").is_some() && passed("foot_r").is_some(),
                "{report}"
            );
            solves(&s, &map, "UAL with control bones");
        }
        // A capitals control bone beside the real head: the deform-style name wins, and with
        // skin hints an unskinned duplicate loses to the skinned bone.
        let (s, skinned) = with_extra(
            &ual.skeleton,
            &[
                ("HEAD", Some("neck_01"), up * 0.1),
                ("Head", Some("neck_01"), up * 0.1),
            ],
        );
        let (map, report) = HumanoidMap::from_skeleton(&s);
        assert_eq!(name_of(&s, &map, B::Head).as_deref(), Some("Head"));
        assert!(
            report
                .passed_over
                .iter()
                .any(|p| p.bone_name == "HEAD" && p.reason == PassedOverReason::ControlName)
        );
        let (map, report) =
            HumanoidMap::from_skeleton_with(&s, &MappingOptions::default().with_skinned(skinned));
        assert_eq!(map.get(B::Head), ual.skeleton.find("Head"));
        assert!(
            report
                .passed_over
                .iter()
                .any(|p| p.bone >= ual.skeleton.len()
                    && p.bone_name == "Head"
                    && p.reason == PassedOverReason::NotSkinned)
        );
    }

    #[test]
    fn detached_foot_takes_the_lower_leg_end_when_there_is_one() {
        // The worker rig with an end bone added under each lower leg at the detached foot's
        // rest position: the foot role takes it, the map validates and the legs solve.
        let worker = rig("quaternius_worker.gltf");
        let s = &worker.skeleton;
        let rest = s.rest_model_transforms();
        let mut extra = Vec::new();
        let names = [
            ("LowerLeg.L", "Foot.L", "LowerLeg.L_end"),
            ("LowerLeg.R", "Foot.R", "LowerLeg.R_end"),
        ];
        for (leg, foot, end) in names {
            let (l, f) = (s.find(leg).unwrap(), s.find(foot).unwrap());
            let local = rest[l].inverse().transform_point(rest[f].translation);
            extra.push((end, Some(leg), local));
        }
        let (s2, _) = with_extra(s, &extra);
        let (map, report) = HumanoidMap::from_skeleton(&s2);
        check_report(&s2, &map, &report);
        assert!(report.is_complete(), "{report}");
        assert_eq!(
            name_of(&s2, &map, B::LeftFoot).as_deref(),
            Some("LowerLeg.L_end")
        );
        solves(&s2, &map, "worker with lower-leg ends");

        // The same bones from the helper, placed where the detached feet rest.
        let (_, report) = HumanoidMap::from_skeleton(s);
        let ends = HumanoidMap::lower_leg_ends_for_detached_feet(s, &report);
        assert_eq!(ends.len(), 2);
        let mut bones = s.bones().to_vec();
        bones.extend(ends);
        let s3 = Skeleton::try_new(bones).unwrap();
        let (map3, report3) = HumanoidMap::from_skeleton(&s3);
        assert!(report3.is_complete(), "{report3}");
        let fk = s3.rest_model_transforms();
        for (role, foot) in [(B::LeftFoot, "Foot.L"), (B::RightFoot, "Foot.R")] {
            let end = map3.get(role).unwrap();
            let d = fk[end]
                .translation
                .distance(fk[s3.find(foot).unwrap()].translation);
            assert!(d < 1e-5, "{role}: {d}");
            assert!(matches!(
                report3
                    .mapped
                    .iter()
                    .find(|m| m.role == role)
                    .unwrap()
                    .source,
                MappingSource::LowerLegEnd { .. }
            ));
        }
        assert_eq!(map3, map);
        solves(&s3, &map3, "worker with helper ends");
    }
}
