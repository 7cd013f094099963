//! Balance for full-body humanoids ([`IkBalance`]): on ik-core's procedurally built test rig,
//! pushing the pelvis target sideways with balance on keeps the centre of mass (computed here
//! independently with ik-core's de Leva masses from the written bone transforms) nearer the
//! support point between the feet than with balance off, while the feet stay on their targets.

use crate::common;

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::{BodyFrame, FullBodySolver, HumanoidBone, HumanoidMap};
use bevy_ik::ik_core::{Pose, Skeleton};
use bevy_ik::prelude::*;
use common::*;
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

/// A character built from ik-core's test rig, its bone entities (in skeleton order) and the
/// core objects used to measure it independently of the plugin.
struct Rig {
    app: App,
    character: Entity,
    bones: Vec<Entity>,
    skeleton: Skeleton,
    solver: FullBodySolver,
    up: Vec3,
}

fn character_transform() -> Transform {
    Transform::from_xyz(1.0, 0.2, -2.0).with_rotation(Quat::from_rotation_y(0.7))
}

fn spawn_rig(humanoid: IkHumanoid, axes: RestAxes) -> Rig {
    let skeleton = test_rig(RigConvention::Mixamo, axes);
    let (map, _) = HumanoidMap::from_skeleton(&skeleton);
    let solver = FullBodySolver::new(&skeleton, &map).unwrap();
    let up = BodyFrame::from_rest(&skeleton, &map).unwrap().up;
    let mut app = app();
    let character = app
        .world_mut()
        .spawn((character_transform(), humanoid))
        .id();
    let mut bones: Vec<Entity> = Vec::with_capacity(skeleton.len());
    for bone in skeleton.bones() {
        let parent = bone.parent.map_or(character, |p| bones[p]);
        let r = bone.rest;
        let transform = Transform {
            translation: r.translation,
            rotation: r.rotation,
            scale: r.scale,
        };
        let e = app
            .world_mut()
            .spawn((Name::new(bone.name.clone()), transform, ChildOf(parent)))
            .id();
        bones.push(e);
    }
    app.update();
    let s = status(&app, character);
    assert!(s.ready && s.last_error.is_none(), "{s:?}");
    Rig {
        app,
        character,
        bones,
        skeleton,
        solver,
        up,
    }
}

impl Rig {
    fn targets(&self) -> IkHumanoidTargets {
        self.app
            .world()
            .get::<IkHumanoidTargets>(self.character)
            .unwrap()
            .clone()
    }

    /// A target's position in the character's frame (targets are its children).
    fn local(&self, e: Entity) -> Vec3 {
        self.app.world().get::<Transform>(e).unwrap().translation
    }

    /// The pose the plugin wrote, read back from the bones' `Transform`s.
    fn written_pose(&self) -> Pose {
        let mut pose = self.skeleton.rest_pose();
        for (i, &e) in self.bones.iter().enumerate() {
            let t = self.app.world().get::<Transform>(e).unwrap();
            pose.rotations[i] = t.rotation;
            pose.translations[i] = t.translation;
        }
        pose
    }

    /// The written pose's centre of mass, character frame (independent of the plugin).
    fn center_of_mass(&mut self) -> Vec3 {
        let pose = self.written_pose();
        assert!(pose.is_finite());
        self.solver.center_of_mass(&self.skeleton, &pose).unwrap()
    }

    /// The support point the balance goal should use: midway between the feet targets.
    fn feet_midpoint(&self) -> Vec3 {
        let t = self.targets();
        (self.local(t.left_foot.unwrap()) + self.local(t.right_foot.unwrap())) * 0.5
    }

    /// Ground-plane distance between the centre of mass and the feet midpoint.
    fn balance_offset(&mut self) -> f32 {
        let d = self.center_of_mass() - self.feet_midpoint();
        (d - self.up * d.dot(self.up)).length()
    }

    /// Largest distance between a foot bone and its target (world).
    fn feet_residual(&self) -> f32 {
        let t = self.targets();
        let map = HumanoidMap::from_skeleton(&self.skeleton).0;
        [
            (HumanoidBone::LeftFoot, t.left_foot.unwrap()),
            (HumanoidBone::RightFoot, t.right_foot.unwrap()),
        ]
        .into_iter()
        .map(|(role, target)| {
            let bone = self.bones[map.get(role).unwrap()];
            world_pos(&self.app, bone).distance(world_pos(&self.app, target))
        })
        .fold(0.0, f32::max)
    }

    fn push_pelvis(&mut self, offset: Vec3) {
        let pelvis = self.targets().pelvis.unwrap();
        self.app
            .world_mut()
            .get_mut::<Transform>(pelvis)
            .unwrap()
            .translation += offset;
    }

    fn set_balance(&mut self, balance: IkBalance) {
        self.app
            .world_mut()
            .get_mut::<IkHumanoid>(self.character)
            .unwrap()
            .balance = balance;
    }

    fn run(&mut self, frames: usize) {
        for _ in 0..frames {
            self.app.update();
        }
    }

    /// Runs frames until the written pose is returned bit for bit (bounded tracking's fixed
    /// point for still goals), at most [`STILL_WITHIN`]; returns how many it took.
    fn settle(&mut self) -> usize {
        let mut last = self.written_pose();
        for frame in 1..=STILL_WITHIN {
            self.app.update();
            let now = self.written_pose();
            if now == last {
                return frame;
            }
            last = now;
        }
        panic!("still goals: the pose still changes after {STILL_WITHIN} frames");
    }
}

/// Frames within which bounded tracking (ik-core's default) comes to rest under still goals:
/// the robustness suite's bound (issue 24: stationary within 30 frames, bit-identical from
/// then on). Balance trades over several frames — the pelvis push and the trunk's lean toward
/// the support each turn joints at most `max_turn` a frame — so the tests below read the
/// settled pose, not a fixed frame count.
const STILL_WITHIN: usize = 30;

/// How far a planted foot may end from its target: the support (pelvis, feet) ranks above the
/// centre of mass, so the feet end within the solver's position tolerance (the character has
/// scale 1: model units are metres), plus a hundredth of it for the round-off of reading them
/// back in world space.
fn feet_tolerance() -> f32 {
    IkHumanoid::auto().full_body_settings.position_tolerance * 1.01
}

/// The pelvis target pushed 12 cm toward the left foot and 3 cm down, balance off and on,
/// on the bounded default, read at rest: with balance the centre of mass ends nearer the
/// feet's midpoint, and both planted feet stay within the solver's position tolerance. (The
/// balance goal leans the hips; while the give-way rule read a leg's reach from the leaning
/// hips, the right foot counted as beyond reach and ended 4.3 mm off on +Y rest axes.)
#[test]
fn balance_keeps_the_centre_of_mass_over_the_feet_when_the_pelvis_is_pushed() {
    for axes in [RestAxes::PlusY, RestAxes::MinusZ] {
        // The same push with balance off and on, each on a fresh character.
        let mut offsets = [0.0f32; 2];
        for (i, balance) in [IkBalance::default(), IkBalance::on()]
            .into_iter()
            .enumerate()
        {
            let mut rig = spawn_rig(IkHumanoid::auto().with_balance(balance), axes);
            let before = rig.balance_offset();
            assert!(
                before < 0.05,
                "{axes:?}: rest CoM {before} off the midpoint"
            );
            // 12 cm toward the character's left (the test rig's +X), 3 cm down.
            rig.push_pelvis(Vec3::new(0.12, -0.03, 0.0));
            rig.settle();
            let s = status(&rig.app, rig.character);
            assert!(s.solved && s.last_error.is_none(), "{axes:?}: {s:?}");
            let feet = rig.feet_residual();
            assert!(
                feet < feet_tolerance(),
                "{axes:?} balance {i}: feet {feet} off target"
            );
            let offset = rig.balance_offset();
            offsets[i] = offset;
            let com = *rig
                .app
                .world()
                .get::<IkCenterOfMass>(rig.character)
                .unwrap();
            if balance.enabled {
                // The plugin's report agrees with the independent measurement.
                assert!(com.active, "{axes:?}");
                let c = rig.center_of_mass();
                assert!(
                    com.center_of_mass.distance(c) < 1e-3,
                    "{axes:?}: {com:?} vs {c}"
                );
                assert!(com.support.distance(rig.feet_midpoint()) < 1e-4, "{axes:?}");
                assert!(
                    (com.offset() - offset).abs() < 1e-3
                        && (s.center_of_mass_residual - offset).abs() < 1e-3,
                    "{axes:?}: residual {} / {} vs measured {offset}",
                    s.center_of_mass_residual,
                    com.offset()
                );
            } else {
                assert!(!com.active, "{axes:?}");
                assert_eq!(s.center_of_mass_residual, 0.0, "{axes:?}");
            }
        }
        let [off, on] = offsets;
        assert!(
            // (The corrective mode settles the trade-off between the pushed pelvis and the
            // balance goal at about half the unbalanced offset, 0.50–0.51.)
            off > 0.03 && on < 0.55 * off,
            "{axes:?}: CoM offset with balance off {off}, on {on}"
        );
    }
}

#[test]
fn balance_is_switched_live() {
    let push = Vec3::new(-0.1, -0.03, 0.0);
    let mut rig = spawn_rig(IkHumanoid::auto(), RestAxes::PlusY);
    let pelvis = rig.targets().pelvis.unwrap();
    let home = rig.local(pelvis);
    rig.push_pelvis(push);
    rig.settle();
    let off = rig.balance_offset();
    assert!(
        !rig.app
            .world()
            .get::<IkCenterOfMass>(rig.character)
            .unwrap()
            .active
    );

    // Switched on while running; the next pelvis move is balanced.
    rig.set_balance(IkBalance::on());
    rig.app
        .world_mut()
        .get_mut::<Transform>(pelvis)
        .unwrap()
        .translation = home;
    rig.settle();
    rig.push_pelvis(push);
    rig.settle();
    let on = rig.balance_offset();
    assert!(on < 0.55 * off, "balance off {off}, on {on}");
    assert!(
        rig.feet_residual() < feet_tolerance(),
        "feet {}",
        rig.feet_residual()
    );
    let com = *rig
        .app
        .world()
        .get::<IkCenterOfMass>(rig.character)
        .unwrap();
    assert!(com.active);

    // Off again: the goal is dropped and reported as such.
    rig.set_balance(IkBalance::default());
    rig.run(1);
    let com = *rig
        .app
        .world()
        .get::<IkCenterOfMass>(rig.character)
        .unwrap();
    assert!(!com.active);
    assert_eq!(status(&rig.app, rig.character).center_of_mass_residual, 0.0);
}

#[test]
fn support_bias_moves_the_centre_of_mass_toward_one_foot() {
    // The same pelvis push, balanced over the midpoint and over a point nearer the left foot
    // (the test rig's +X): the second centre of mass lies further toward the left foot.
    let mut along = [0.0f32; 2];
    for (i, bias) in [0.5, 0.2].into_iter().enumerate() {
        let balance = IkBalance {
            support_bias: bias,
            ..IkBalance::on()
        };
        let mut rig = spawn_rig(IkHumanoid::auto().with_balance(balance), RestAxes::PlusY);
        rig.push_pelvis(Vec3::new(-0.1, -0.03, 0.0));
        // The trade between the pushed pelvis and the biased balance goal settles over a few
        // frames of the turn bound.
        rig.settle();
        let t = rig.targets();
        let (left, right) = (
            rig.local(t.left_foot.unwrap()),
            rig.local(t.right_foot.unwrap()),
        );
        let com = *rig
            .app
            .world()
            .get::<IkCenterOfMass>(rig.character)
            .unwrap();
        assert!(
            com.support.distance(left.lerp(right, bias)) < 1e-4,
            "{com:?}"
        );
        assert!(rig.feet_residual() < 1e-3, "feet {}", rig.feet_residual());
        let c = rig.center_of_mass();
        // Position along the right → left foot axis.
        let axis = (left - right).normalize();
        along[i] = (c - right).dot(axis);
    }
    assert!(
        along[1] > along[0] + 0.005,
        "CoM along the feet axis: midpoint support {}, biased {}",
        along[0],
        along[1]
    );
}

#[test]
fn non_finite_balance_settings_are_reported_not_panicked_on() {
    let mut rig = spawn_rig(
        IkHumanoid::auto().with_balance(IkBalance::on()),
        RestAxes::PlusY,
    );
    rig.set_balance(IkBalance {
        weight: f32::INFINITY,
        ..IkBalance::on()
    });
    rig.push_pelvis(Vec3::new(0.1, 0.0, 0.0));
    rig.run(2);
    let s = status(&rig.app, rig.character);
    assert!(!s.solved && s.last_error.is_some(), "{s:?}");
    let after = rig.written_pose();
    assert!(after.is_finite());
    // The failed stage writes nothing: the bones are back on their input (here the rest pose,
    // nothing animates them).
    assert_eq!(
        after,
        rig.skeleton.rest_pose(),
        "the character keeps its input pose"
    );
    // A NaN bias falls back to the midpoint and solves.
    rig.set_balance(IkBalance {
        support_bias: f32::NAN,
        ..IkBalance::on()
    });
    rig.run(3);
    let s = status(&rig.app, rig.character);
    assert!(s.solved && s.last_error.is_none(), "{s:?}");
    let com = *rig
        .app
        .world()
        .get::<IkCenterOfMass>(rig.character)
        .unwrap();
    assert!(com.support.distance(rig.feet_midpoint()) < 1e-4);
}

#[test]
fn support_point_lies_between_the_feet() {
    let (l, r) = (Vec3::new(0.1, 0.0, 0.0), Vec3::new(-0.1, 0.0, 0.2));
    let b = |bias| IkBalance {
        support_bias: bias,
        ..IkBalance::on()
    };
    assert!(
        b(0.5)
            .support_point(l, r)
            .distance(Vec3::new(0.0, 0.0, 0.1))
            < 1e-6
    );
    assert_eq!(b(0.0).support_point(l, r), l);
    assert_eq!(b(1.0).support_point(l, r), r);
    assert_eq!(b(-3.0).support_point(l, r), l);
    assert_eq!(b(7.0).support_point(l, r), r);
    assert_eq!(b(f32::NAN).support_point(l, r), b(0.5).support_point(l, r));
}
