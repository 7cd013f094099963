//! The secondary-motion components on a headless app (60 Hz manual clock), measured on the
//! propagated `GlobalTransform`s:
//!
//! - [`IkSpringChain`]: a ponytail (bones along −Z, rotated rest frames) on a head that shakes
//!   swings, stays finite, keeps out of a sphere collider by more than its hit radius less a
//!   tolerance, comes back to rest when the head stops, and [`IkSpringReset`] puts it back at
//!   the animated pose at once;
//! - [`IkChain`]: a 12-bone FABRIK and CCD tail reaches a target entity within 1 mm;
//! - [`IkSpline`]: a chain follows a Bevy `CubicCurve` and a point-entity curve, the fit
//!   error is the stage's status residual;
//! - [`IkVelocityLimit`]: a bone snapped by a later `Transform` write turns no faster than the
//!   limit;
//! - VRM (feature `vrm`): the generated VRM 0.x and 1.0 test avatars' spring bones are read
//!   from the files and swing under a head shake.

use crate::common;

use core::time::Duration;

use bevy::math::cubic_splines::{CubicBezier, CubicGenerator};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_ik::prelude::*;
use common::*;

const DT: f32 = 1.0 / 60.0;

fn app60() -> App {
    let mut app = app();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
        DT,
    )));
    app
}

fn global(app: &App, e: Entity) -> GlobalTransform {
    *app.world().get::<GlobalTransform>(e).unwrap()
}

/// A chain of `n` bones under `parent`, each `length` along `axis` in its parent's rotated
/// frame: the bone entities, root first.
fn spawn_chain(
    app: &mut App,
    parent: Entity,
    first: Vec3,
    n: usize,
    axis: Vec3,
    length: f32,
) -> Vec<Entity> {
    let mut bones = Vec::new();
    let mut p = parent;
    for i in 0..n {
        // A rest rotation per bone, and the offset expressed in the rotated parent frame.
        let rot = Quat::from_rotation_z(0.3 * (i % 3) as f32 - 0.3);
        let parent_rot = if i == 0 {
            Quat::IDENTITY
        } else {
            Quat::from_rotation_z(0.3 * ((i - 1) % 3) as f32 - 0.3)
        };
        let offset = if i == 0 {
            first
        } else {
            parent_rot.inverse() * (axis * length)
        };
        let e = app
            .world_mut()
            .spawn((
                Name::new(format!("bone{i}")),
                Transform::from_translation(offset).with_rotation(rot),
                ChildOf(p),
            ))
            .id();
        bones.push(e);
        p = e;
    }
    bones
}

struct Ponytail {
    app: App,
    head: Entity,
    hair: Vec<Entity>,
    stage: Entity,
    collider: Entity,
}

const HIT: f32 = 0.02;
const SPHERE: f32 = 0.08;

fn ponytail() -> Ponytail {
    let mut app = app60();
    let character = app
        .world_mut()
        .spawn(Transform::from_xyz(1.0, 0.0, 2.0))
        .id();
    let head = app
        .world_mut()
        .spawn((
            Name::new("head"),
            Transform::from_xyz(0.0, 1.6, 0.0),
            ChildOf(character),
        ))
        .id();
    let hair = spawn_chain(
        &mut app,
        head,
        Vec3::new(0.0, 0.1, -0.1),
        4,
        Vec3::NEG_Z,
        0.08,
    );
    // A sphere below the hair's root: the ponytail falls onto it.
    let collider = app
        .world_mut()
        .spawn((
            Transform::from_xyz(0.0, -0.05, -0.2),
            IkSpringCollider {
                shape: IkColliderShape::Sphere {
                    offset: Vec3::ZERO,
                    radius: SPHERE,
                },
            },
            ChildOf(head),
        ))
        .id();
    let params = IkSpringJoint {
        stiffness: 0.5,
        gravity_power: 1.0,
        drag_force: 0.3,
        hit_radius: HIT,
        ..IkSpringJoint::default()
    };
    let stage = app
        .world_mut()
        .spawn((
            IkSpringChain::uniform(hair.iter().copied(), &params).with_colliders([collider]),
            IkStageOf(character),
        ))
        .id();
    Ponytail {
        app,
        head,
        hair,
        stage,
        collider,
    }
}

/// The tips' world positions: each joint's child origin, and the last one's virtual tail is
/// not an entity, so the joints 1.. stand for the tails of 0...
fn joints(app: &App, hair: &[Entity]) -> Vec<Vec3> {
    hair.iter().map(|&e| global(app, e).translation()).collect()
}

#[test]
fn a_spring_chain_swings_collides_settles_and_resets() {
    let mut p = ponytail();
    // The animated pose (what the hierarchy holds before the plugin writes anything).
    let mut world = Transform::from_xyz(1.0, 0.0, 2.0).compute_affine()
        * p.app
            .world()
            .get::<Transform>(p.head)
            .unwrap()
            .compute_affine();
    let rest: Vec<Vec3> = p
        .hair
        .iter()
        .map(|&e| {
            world *= p.app.world().get::<Transform>(e).unwrap().compute_affine();
            world.translation.into()
        })
        .collect();
    p.app.update();
    p.app.update();
    let status = status(&p.app, p.stage);
    assert!(status.ready, "{status:?}");
    let mut largest_swing = 0.0f32;
    let mut deepest = f32::NEG_INFINITY;
    // Two seconds of head shake, then three still.
    for k in 0..300 {
        let t = k as f32 * DT;
        let yaw = if k < 120 { 0.8 * (12.0 * t).sin() } else { 0.0 };
        p.app
            .world_mut()
            .get_mut::<Transform>(p.head)
            .unwrap()
            .rotation = Quat::from_rotation_y(yaw);
        p.app.update();
        let now = joints(&p.app, &p.hair);
        for (i, q) in now.iter().enumerate() {
            assert!(q.is_finite(), "frame {k}: joint {i} {q}");
        }
        // Penetration of the collider by the tails (joints 1..), beyond the hit radius.
        let sphere = global(&p.app, p.collider).translation();
        for q in &now[1..] {
            deepest = deepest.max(SPHERE + HIT - q.distance(sphere));
        }
        if k < 120 {
            // Relative to the head's own turn: the motion the spring adds.
            let head = global(&p.app, p.head);
            let tip_local = head.affine().inverse().transform_point3(now[3]);
            let rest_local = Transform::from_xyz(1.0, 1.6, 2.0)
                .compute_affine()
                .inverse()
                .transform_point3(rest[3]);
            largest_swing = largest_swing.max(tip_local.distance(rest_local));
        }
    }
    assert!(
        largest_swing > 0.02,
        "the shake moved the tip {largest_swing} m"
    );
    // The hit sphere touches the collider at most: a tolerance of 1 mm for the step.
    assert!(
        deepest <= HIT + 1e-3,
        "penetration {deepest} m beyond the surface"
    );
    // After three still seconds the chain is at rest: one more frame moves it < 0.1 mm.
    let a = joints(&p.app, &p.hair);
    p.app.update();
    let b = joints(&p.app, &p.hair);
    let moved = a
        .iter()
        .zip(&b)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    assert!(moved < 1e-4, "still moving {moved} m a frame");
    // Reset: the tails start again at the animated pose (the spawned rest pose), though
    // gravity had pulled them down; the reset frame's one step moves them by at most its
    // gravity and stiffness push (VRM's per-frame `power · dt` each, at 60 Hz).
    let hanging = b[3];
    p.app.world_mut().entity_mut(p.stage).insert(IkSpringReset);
    p.app.update();
    let reset = joints(&p.app, &p.hair);
    let one_step = (1.0 + 0.5) * DT;
    assert!(
        reset[3].distance(rest[3]) < one_step,
        "reset {} m from the animated pose (hanging was {} m)",
        reset[3].distance(rest[3]),
        hanging.distance(rest[3])
    );
    assert!(p.app.world().get::<IkSpringReset>(p.stage).is_none());
    // Weight 0: the animated pose.
    p.app
        .world_mut()
        .get_mut::<IkSpringChain>(p.stage)
        .unwrap()
        .weight = 0.0;
    for _ in 0..30 {
        p.app.update();
    }
    let off = joints(&p.app, &p.hair);
    assert!(off[3].distance(rest[3]) < 1e-4);
}

#[test]
fn chains_reach_a_target_entity_with_fabrik_and_ccd() {
    for method in [IkChainMethod::Fabrik, IkChainMethod::Ccd] {
        let mut app = app60();
        let character = app
            .world_mut()
            .spawn(Transform::from_xyz(0.0, 0.5, 0.0).with_rotation(Quat::from_rotation_y(0.4)))
            .id();
        let root = app
            .world_mut()
            .spawn((Transform::default(), ChildOf(character)))
            .id();
        let bones = spawn_chain(
            &mut app,
            root,
            Vec3::new(0.0, 0.0, -0.1),
            12,
            Vec3::NEG_X,
            0.1,
        );
        let target = app
            .world_mut()
            .spawn(Transform::from_xyz(-0.5, 0.9, 0.3))
            .id();
        let stage = app
            .world_mut()
            .spawn((
                IkChain {
                    method,
                    max_iterations: 1000,
                    tolerance: Some(1e-4),
                    ..IkChain::new(bones[0], bones[11], target)
                },
                IkStageOf(character),
            ))
            .id();
        for _ in 0..3 {
            app.update();
        }
        let tip = global(&app, bones[11]).translation();
        let goal = global(&app, target).translation();
        let s = status(&app, stage);
        assert!(
            tip.distance(goal) < 1e-3,
            "{method:?}: {} m off ({s:?})",
            tip.distance(goal)
        );
        assert!(s.converged, "{method:?}: {s:?}");
        // A still target: the output is the same bit for bit frame after frame.
        let before: Vec<Quat> = bones
            .iter()
            .map(|&b| app.world().get::<Transform>(b).unwrap().rotation)
            .collect();
        app.update();
        let after: Vec<Quat> = bones
            .iter()
            .map(|&b| app.world().get::<Transform>(b).unwrap().rotation)
            .collect();
        assert_eq!(before, after, "{method:?}");
    }
}

#[test]
fn splines_follow_bevy_curves_and_point_entities_and_report_the_fit() {
    let mut app = app60();
    let character = app.world_mut().spawn(Transform::default()).id();
    let root = app
        .world_mut()
        .spawn((Transform::default(), ChildOf(character)))
        .id();
    let bones = spawn_chain(&mut app, root, Vec3::ZERO, 8, Vec3::Y, 0.1);
    // A Bézier curve from the chain's root, bending toward +X, longer than the chain.
    let curve = CubicBezier::new([[
        Vec3::ZERO,
        Vec3::new(0.0, 0.4, 0.0),
        Vec3::new(0.3, 0.7, 0.0),
        Vec3::new(0.6, 0.8, 0.0),
    ]])
    .to_curve()
    .unwrap();
    let stage = app
        .world_mut()
        .spawn((
            IkSpline {
                root: bones[0].into(),
                tip: bones[7].into(),
                curve: IkSplineCurve::Cubic(curve.clone()),
                ..IkSpline::default()
            },
            IkStageOf(character),
        ))
        .id();
    app.update();
    app.update();
    let s = status(&app, stage);
    assert!(s.ready && s.solved, "{s:?}");
    // Measured: every joint's distance to a dense sampling of the curve.
    let dense: Vec<Vec3> = curve.iter_positions(2000).collect();
    let worst = bones
        .iter()
        .map(|&b| {
            let p = global(&app, b).translation();
            dense
                .iter()
                .map(|q| q.distance(p))
                .fold(f32::INFINITY, f32::min)
        })
        .fold(0.0, f32::max);
    assert!(worst < 5e-3, "joints {worst} m from the curve");
    // The reported fit error is the same measure against the stage's own sampling.
    assert!(
        (s.position_residual - worst).abs() < 2e-3 && s.position_residual < 5e-3,
        "reported {} measured {worst}",
        s.position_residual
    );
    // The tip bent toward +X.
    assert!(global(&app, bones[7]).translation().x > 0.1);
    // Point entities (Catmull-Rom): a straight line along +Z from the root.
    let points: Vec<Entity> = (0..4)
        .map(|i| {
            app.world_mut()
                .spawn(Transform::from_xyz(0.0, 0.0, 0.4 * i as f32))
                .id()
        })
        .collect();
    app.world_mut().get_mut::<IkSpline>(stage).unwrap().curve = IkSplineCurve::Points {
        kind: IkCurveKind::CatmullRom,
        points,
    };
    app.update();
    let tip = global(&app, bones[7]).translation();
    assert!(
        tip.distance(Vec3::new(0.0, 0.0, 0.7)) < 1e-3,
        "tip at {tip} on a straight curve"
    );
}

#[test]
fn the_velocity_limit_holds_on_the_written_bones() {
    let mut app = app60();
    let character = app.world_mut().spawn(Transform::default()).id();
    let root = app
        .world_mut()
        .spawn((Transform::default(), ChildOf(character)))
        .id();
    let bones = spawn_chain(&mut app, root, Vec3::ZERO, 2, Vec3::Y, 0.3);
    let speed = 90.0f32; // degrees per second
    app.world_mut().spawn((
        IkVelocityLimit {
            bones: vec![bones[0].into()],
            max_speed: speed,
        },
        IkStageOf(character),
    ));
    app.update();
    app.update();
    let start = app.world().get::<Transform>(bones[0]).unwrap().rotation;
    // The animation snaps the bone half a turn: the limiter spreads it.
    let snapped = start * Quat::from_rotation_x(3.0);
    let mut last = start;
    let step = (speed * DT).to_radians();
    for k in 0..200 {
        app.world_mut()
            .get_mut::<Transform>(bones[0])
            .unwrap()
            .rotation = snapped;
        app.update();
        let now = app.world().get::<Transform>(bones[0]).unwrap().rotation;
        assert!(now.is_finite());
        let turn = last.angle_between(now);
        assert!(
            turn <= step * 1.001 + 1e-6,
            "frame {k}: {turn} rad > {step}"
        );
        last = now;
    }
    assert!(last.angle_between(snapped) < 1e-3, "never arrived");
}

#[cfg(feature = "vrm")]
#[test]
fn vrm_avatars_spring_bones_are_read_and_swing_under_a_head_shake() {
    use crate::gltf_characters::{app as gltf_app, write_vrm};
    use bevy::gltf::GltfAssetLabel;
    use bevy::world_serialization::{WorldAsset, WorldAssetRoot};
    use bevy_ik::ik_core::humanoid::HumanoidBone;
    use std::time::Instant;
    for version in [0u8, 1] {
        let file = format!("springs{version}.vrm");
        let dir = write_vrm(version, true, &file);
        let mut app = gltf_app(&dir);
        app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
            DT,
        )));
        // The avatar alone: no humanoid solver, so the head turns only as the test turns it.
        let path = GltfAssetLabel::Scene(0).from_asset(file.clone());
        let scene: Handle<WorldAsset> = app.world().resource::<AssetServer>().load(path);
        app.world_mut()
            .spawn((WorldAssetRoot(scene), Transform::default()));
        let start = Instant::now();
        let springs = loop {
            app.update();
            let springs: Vec<(Entity, IkSpringChain)> = app
                .world_mut()
                .query::<(Entity, &IkSpringChain)>()
                .iter(app.world())
                .map(|(e, c)| (e, c.clone()))
                .collect();
            if springs.len() >= 2 && springs.iter().all(|(e, _)| status(&app, *e).ready) {
                break springs;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "{file}: springs not set up: {springs:?}"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        let mut springs = springs;
        springs.sort_by_key(|(e, _)| *e);
        // Two chains (VRM 1.0: a spring per strand; VRM 0.x: the group's branching root, a
        // chain per branch), with the file's colliders (head sphere, chest capsule/spheres,
        // VRM 1.0's extended plane).
        assert_eq!(springs.len(), 2, "{file}: {springs:?}");
        let colliders: usize = springs.iter().map(|(_, c)| c.colliders.len()).sum();
        // Three per chain: VRM 1.0 head sphere, chest capsule and plane; VRM 0.x head
        // sphere and two chest spheres.
        assert_eq!(colliders, 6, "{file}: colliders");
        for (e, _) in &springs {
            let s = status(&app, *e);
            assert!(s.last_error.is_none(), "{file}: {s:?}");
        }
        let head = app
            .world_mut()
            .query::<(Entity, &IkHumanoidBone)>()
            .iter(app.world())
            .find(|(_, b)| b.role() == Some(HumanoidBone::Head))
            .map(|(e, _)| e)
            .expect("the head tagged from the VRM table");
        let strand_tips: Vec<Entity> = springs
            .iter()
            .map(|(_, c)| match &c.joints.last().unwrap().bone {
                BoneRef::Entity(e) => *e,
                other => panic!("{other:?}"),
            })
            .collect();
        let local = |app: &App, e: Entity| {
            global(app, head)
                .affine()
                .inverse()
                .transform_point3(global(app, e).translation())
        };
        // Settle, then shake the head (its local rotation, as an animation would).
        for _ in 0..180 {
            app.update();
        }
        let settled: Vec<Vec3> = strand_tips.iter().map(|&e| local(&app, e)).collect();
        let head_rest = app.world().get::<Transform>(head).unwrap().rotation;
        let mut swing = 0.0f32;
        for k in 0..90 {
            let yaw = 0.7 * (14.0 * k as f32 * DT).sin();
            app.world_mut().get_mut::<Transform>(head).unwrap().rotation =
                head_rest * Quat::from_rotation_y(yaw);
            app.update();
            for (&e, s) in strand_tips.iter().zip(&settled) {
                let p = local(&app, e);
                assert!(p.is_finite(), "{file}: frame {k}");
                swing = swing.max(p.distance(*s));
            }
        }
        // Relative to the head, the strands lag its turn by centimetres.
        assert!(
            swing > 0.01,
            "{file}: strands moved {swing} m in the head's frame"
        );
        println!("{file}: strand tips swung up to {swing:.3} m against the head");
    }
}

/// The creature of `examples/creature.rs` (its generator and stages, shared).
#[cfg(feature = "mesh-ground")]
#[path = "../../../../examples/creature/rig.rs"]
mod creature;

/// The procedural quadruped walks (glides) over a 10° slope and a flat: its four feet stay on
/// the ground (their rest clearance above it, along the normal, within 2 cm while moving),
/// the head turns to a target, the tail swings, and no transform is ever NaN.
#[cfg(feature = "mesh-ground")]
#[test]
fn the_creature_keeps_its_four_feet_on_the_ground() {
    use bevy::asset::AssetPlugin;
    use bevy::mesh::{Mesh, Mesh3d, Meshable};

    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        TransformPlugin,
        AssetPlugin::default(),
        IkPlugin::default(),
    ))
    .init_asset::<Mesh>();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
        DT,
    )));
    // Ground: flat for x < 0, a 10° slope rising toward +X from x = 0.
    let slope = Quat::from_rotation_z(10f32.to_radians());
    let normal = slope * Vec3::Y;
    let meshes = [
        Plane3d::default().mesh().size(4.0, 4.0),
        Plane3d::default().mesh().size(4.0, 4.0),
    ]
    .map(|m| app.world_mut().resource_mut::<Assets<Mesh>>().add(m));
    let [flat, ramp] = meshes;
    app.world_mut()
        .spawn((Mesh3d(flat), Transform::from_xyz(-2.0, 0.0, 0.0), IkGround));
    app.world_mut().spawn((
        Mesh3d(ramp),
        Transform::from_translation(slope * Vec3::new(2.0, 0.0, 0.0)).with_rotation(slope),
        IkGround,
    ));
    let ground_height = |p: Vec3| {
        if p.x < 0.0 {
            p.y
        } else {
            (p - Vec3::ZERO).dot(normal)
        }
    };
    let start = Vec3::new(-1.5, 0.0, 0.0);
    let root = app
        .world_mut()
        .spawn(Transform::from_translation(start).with_rotation(Quat::from_rotation_y(0.5)))
        .id();
    let look = app
        .world_mut()
        .spawn(Transform::from_xyz(0.0, 1.0, 3.0))
        .id();
    let (bones, stages) = {
        let world = app.world_mut();
        let mut commands = world.commands();
        let bones = creature::spawn_skeleton(&mut commands, root);
        let stages = creature::spawn_stages(&mut commands, root, &bones, Some(look));
        world.flush();
        (bones, stages)
    };
    // Rest clearance of each foot joint above flat ground.
    let clearance: Vec<f32> = creature::LEGS
        .iter()
        .map(|l| creature::JOINTS[l[2]].2[1])
        .collect();
    for _ in 0..30 {
        app.update();
    }
    for s in stages {
        let st = status(&app, s);
        assert!(st.ready && st.last_error.is_none(), "{st:?}");
    }
    let head_rest = global(&app, bones[creature::HEAD]).rotation();
    let tail_tip = *creature::TAIL.last().unwrap();
    let mut worst = 0.0f32;
    let mut tail_swing = 0.0f32;
    // Three seconds forward at 0.8 m/s onto the slope; the root stays at the flat's height
    // (no character controller): the pelvis and legs take the slope.
    let frames = 180;
    for k in 0..frames {
        let x = start.x + 0.8 * k as f32 * DT;
        app.world_mut()
            .get_mut::<Transform>(root)
            .unwrap()
            .translation
            .x = x;
        app.update();
        let all_finite = bones.iter().all(|&b| global(&app, b).affine().is_finite());
        assert!(all_finite, "frame {k}: a NaN bone");
        if k >= 10 {
            for (leg, c) in creature::LEGS.iter().zip(&clearance) {
                let p = global(&app, bones[leg[2]]).translation();
                let err = (ground_height(p) - c).abs();
                worst = worst.max(err);
            }
        }
        let root_t = global(&app, root);
        let rest_tail = root_t.transform_point(Vec3::from_array(creature::JOINTS[tail_tip].2));
        tail_swing = tail_swing.max(
            global(&app, bones[tail_tip])
                .translation()
                .distance(rest_tail),
        );
    }
    println!("creature: worst foot clearance error {worst} m, tail swing {tail_swing} m");
    assert!(
        worst < 0.02,
        "a foot {worst} m off its clearance above the ground"
    );
    // The head turned toward the target.
    let head_now = global(&app, bones[creature::HEAD]).rotation();
    assert!(head_now.angle_between(head_rest) > 0.05);
    assert!(tail_swing > 0.005, "the tail never moved: {tail_swing} m");
}
