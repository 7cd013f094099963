//! The batched limb path (`IkPlugin::with_batched_limbs(true)`; by default from
//! `IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS` batchable characters on) against the scalar one: the same crowd of four-limb characters in two apps, one batched and one not, must put
//! every bone within 1e-5 of the limb length of the other and report the same statuses — over
//! a goal mix with unreachable targets, wrist orientations, poles, no poles, swivel angles,
//! partial weights, a disabled limb, flex limits and soft reach, a limb whose settings change
//! and one whose bone lengths animation changes, and a fifth stage on an already-solved arm
//! (not batched: it reads what the first one wrote). And the default rule: a few characters
//! one by one, a crowd batched, `with_batched_limbs` overriding either way.

use crate::common;

use bevy::prelude::*;
use bevy_ik::prelude::*;
use common::*;

/// Indices into `POSITIONS`: (root, mid, tip) of left arm, right arm, left leg, right leg.
const LIMBS: [[usize; 3]; 4] = [[6, 7, 8], [10, 11, 12], [13, 14, 15], [17, 18, 19]];

/// A small deterministic generator.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }

    fn signed(&mut self) -> f32 {
        2.0 * self.next() - 1.0
    }

    fn vec(&mut self) -> Vec3 {
        Vec3::new(self.signed(), self.signed(), self.signed())
    }
}

struct Character {
    root: Entity,
    bones: Vec<Entity>,
    targets: Vec<Entity>,
    limbs: Vec<Entity>,
}

fn limb_length(limb: [usize; 3]) -> f32 {
    let p = |i: usize| Vec3::from(POSITIONS[i].1);
    p(limb[0]).distance(p(limb[1])) + p(limb[1]).distance(p(limb[2]))
}

fn spawn_crowd(app: &mut App, count: usize) -> Vec<Character> {
    let mut rng = Lcg(7);
    let mut out = Vec::new();
    for c in 0..count {
        let at = Vec3::new((c % 4) as f32, 0.0, (c / 4) as f32);
        let root = app.world_mut().spawn(Transform::from_translation(at)).id();
        let bones = spawn_humanoid(app.world_mut(), root, &MIXAMO_NAMES);
        let mut targets = Vec::new();
        let mut limbs = Vec::new();
        for (k, limb) in LIMBS.iter().enumerate() {
            let tip = Vec3::from(POSITIONS[limb[2]].1);
            let target = app
                .world_mut()
                .spawn((
                    Transform::from_translation(tip + 0.3 * rng.vec())
                        .with_rotation(Quat::from_scaled_axis(rng.vec())),
                    ChildOf(root),
                ))
                .id();
            let mut ik =
                IkLimb::new(bones[limb[0]], bones[limb[1]], bones[limb[2]]).with_target(target);
            match (c + k) % 3 {
                0 => {
                    let mid = Vec3::from(POSITIONS[limb[1]].1);
                    let pole = app
                        .world_mut()
                        .spawn((
                            Transform::from_translation(mid + Vec3::Z * 0.4 + 0.1 * rng.vec()),
                            ChildOf(root),
                        ))
                        .id();
                    ik.pole = Some(pole);
                }
                1 => ik.swivel = Some(rng.signed()),
                _ => {}
            }
            if (c + k) % 4 == 1 {
                ik.weight = 0.5;
            }
            if (c + 2 * k) % 5 == 0 {
                ik.rotation_weight = 1.0;
            }
            if (c + k) % 6 == 2 {
                ik.settings.flex_min = 0.3;
                ik.settings.flex_max = 1.8;
            }
            if (c + k) % 7 == 3 {
                ik.settings.soft_reach = 0.1;
            }
            let mut e = app.world_mut().spawn((ik, IkStageOf(root)));
            if c % 5 == 2 && k == 2 {
                e.insert(IkDisabled);
            }
            limbs.push(e.id());
            targets.push(target);
        }
        if c % 4 == 3 {
            // A fifth stage on the left arm again: it reads the first stage's output.
            let target = app
                .world_mut()
                .spawn((
                    Transform::from_translation(Vec3::from(POSITIONS[8].1) + 0.2 * rng.vec()),
                    ChildOf(root),
                ))
                .id();
            let e = app
                .world_mut()
                .spawn((
                    IkLimb::new(bones[6], bones[7], bones[8]).with_target(target),
                    IkStageOf(root),
                ))
                .id();
            limbs.push(e);
            targets.push(target);
        }
        out.push(Character {
            root,
            bones,
            targets,
            limbs,
        });
    }
    out
}

/// Moves every target (the same motion in both apps).
fn move_targets(app: &mut App, crowd: &[Character], frame: usize) {
    let mut rng = Lcg(1000 + frame as u64);
    for ch in crowd {
        for &t in &ch.targets {
            let d = 0.08 * rng.vec();
            let r = Quat::from_scaled_axis(0.2 * rng.vec());
            let mut tr = app.world_mut().get_mut::<Transform>(t).unwrap();
            tr.translation += d;
            tr.rotation = r * tr.rotation;
        }
    }
}

#[test]
fn batched_limbs_match_the_scalar_limbs() {
    let count = 16;
    let mut apps = [true, false].map(|batched| {
        let mut app = App::new();
        app.add_plugins((
            MinimalPlugins,
            TransformPlugin,
            IkPlugin::default().with_batched_limbs(batched),
        ));
        let crowd = spawn_crowd(&mut app, count);
        (app, crowd)
    });
    let shortest = LIMBS.map(limb_length).into_iter().fold(f32::MAX, f32::min);
    let tolerance = 1e-5 * shortest;
    let mut worst = 0f32;
    for frame in 0..8 {
        for (app, crowd) in &mut apps {
            if frame > 0 {
                move_targets(app, crowd, frame);
            }
            if frame == 4 {
                // A settings change (the batch is rebuilt) and a longer forearm (its lane's
                // bone lengths are updated).
                let limb = crowd[1].limbs[0];
                app.world_mut()
                    .get_mut::<IkLimb>(limb)
                    .unwrap()
                    .settings
                    .flex_max = 1.5;
                let hand = crowd[2].bones[12];
                app.world_mut()
                    .get_mut::<Transform>(hand)
                    .unwrap()
                    .translation *= 1.1;
            }
            app.update();
        }
        let [(a, crowd_a), (b, crowd_b)] = &apps;
        for (ca, cb) in crowd_a.iter().zip(crowd_b) {
            let batched = a.world().get::<IkCharacter>(ca.root).unwrap();
            let expected = if ca.limbs.len() > 4 {
                4
            } else {
                ca.limbs.len()
            };
            assert_eq!(
                batched.batched_limbs(),
                expected,
                "the leading independent limbs are batched"
            );
            assert_eq!(
                batched.batched_limbs_solved(),
                expected,
                "and solved batched"
            );
            let scalar = b.world().get::<IkCharacter>(cb.root).unwrap();
            assert_eq!(scalar.batched_limbs(), expected, "batchable (not used)");
            assert_eq!(scalar.batched_limbs_solved(), 0);
            for (&ba, &bb) in ca.bones.iter().zip(&cb.bones) {
                let (pa, pb) = (world_pos(a, ba), world_pos(b, bb));
                assert!(pa.is_finite());
                let d = pa.distance(pb);
                worst = worst.max(d);
                assert!(
                    d <= tolerance,
                    "frame {frame}: a bone is {d} from the scalar path's (tolerance {tolerance})"
                );
            }
            for (&la, &lb) in ca.limbs.iter().zip(&cb.limbs) {
                let (sa, sb) = (status(a, la), status(b, lb));
                assert_eq!(
                    (sa.ready, sa.solved, sa.converged, &sa.last_error),
                    (sb.ready, sb.solved, sb.converged, &sb.last_error),
                    "frame {frame}"
                );
                assert!(
                    (sa.position_residual - sb.position_residual).abs() <= tolerance,
                    "frame {frame}: residual {} vs {}",
                    sa.position_residual,
                    sb.position_residual
                );
            }
        }
    }
    // The goal mix moved the limbs (the comparison is not of two rest poses).
    let (a, crowd_a) = &apps[0];
    let moved = crowd_a[0].limbs.iter().any(|&l| status(a, l).solved);
    assert!(moved);
    println!("worst bone difference {worst:e} (tolerance {tolerance:e})");
}

/// How many stages each character's last solve batched.
fn solved_batched(app: &App, crowd: &[Character]) -> Vec<usize> {
    crowd
        .iter()
        .map(|c| {
            let ch = app.world().get::<IkCharacter>(c.root).unwrap();
            assert_eq!(ch.batched_limbs(), 4, "every character has a batch");
            ch.batched_limbs_solved()
        })
        .collect()
}

#[test]
fn by_default_a_crowd_is_batched_and_a_few_characters_are_not() {
    let few = IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS - 1;
    let app_with = |plugin: IkPlugin, count: usize| {
        let mut app = App::new();
        app.add_plugins((MinimalPlugins, TransformPlugin, plugin));
        let crowd = spawn_crowd(&mut app, count);
        app.update();
        (app, crowd)
    };
    // Below the threshold: one by one.
    let (mut app, mut crowd) = app_with(IkPlugin::default(), few);
    assert_eq!(solved_batched(&app, &crowd), vec![0; few]);
    // One more character with a batch: every one is batched, from that frame on.
    crowd.extend(spawn_crowd(&mut app, 1));
    app.update();
    assert_eq!(solved_batched(&app, &crowd), vec![4; few + 1]);
    // A character despawned: below the threshold again.
    let gone = crowd.pop().unwrap();
    app.world_mut().entity_mut(gone.root).despawn();
    app.update();
    assert_eq!(solved_batched(&app, &crowd), vec![0; few]);
    // The override, either way.
    let (app, crowd) = app_with(IkPlugin::default().with_batched_limbs(true), 2);
    assert_eq!(solved_batched(&app, &crowd), vec![4; 2]);
    let (app, crowd) = app_with(IkPlugin::default().with_batched_limbs(false), few + 8);
    assert_eq!(solved_batched(&app, &crowd), vec![0; few + 8]);
}

/// Turns each character's four leading `IkLimb` stages into one `IkLimbBatch` stage in their
/// place (on the first limb's entity, so a fifth stage still runs after it); a disabled limb
/// becomes a limb at weight 0 (its bones pass through, as the disabled stage's do).
fn limbs_into_one_stage(app: &mut App, crowd: &[Character]) {
    for ch in crowd {
        let world = app.world_mut();
        let limbs: Vec<IkLimb> = ch.limbs[..4]
            .iter()
            .map(|&e| {
                let mut limb = world.get::<IkLimb>(e).unwrap().clone();
                if world.get::<IkDisabled>(e).is_some() {
                    limb.weight = 0.0;
                }
                limb
            })
            .collect();
        for &e in &ch.limbs[..4] {
            world.entity_mut(e).remove::<(IkLimb, IkDisabled)>();
        }
        world
            .entity_mut(ch.limbs[0])
            .insert(IkLimbBatch::new(limbs));
    }
}

/// `IkLimbBatch` (ik-core's `LimbBatchStage` as a registered stage kind) against four `IkLimb`
/// stages, both solved one by one by the plugin (`with_batched_limbs(false)`): over the same
/// goal mix and moving targets, every bone within 1e-4 of the per-limb stages' and every tip as
/// far from its target, and the stage's status giving each limb's residual as its `IkLimb`'s.
#[test]
fn limb_batch_stage_meets_the_goals_as_the_limb_stages_do() {
    const TOLERANCE: f32 = 1e-4;
    let count = 12;
    let mut apps = [false, true].map(|one_stage| {
        let mut app = App::new();
        app.add_plugins((
            MinimalPlugins,
            TransformPlugin,
            IkPlugin::default().with_batched_limbs(false),
        ));
        let crowd = spawn_crowd(&mut app, count);
        if one_stage {
            limbs_into_one_stage(&mut app, &crowd);
        }
        (app, crowd)
    });
    let mut worst = 0f32;
    for frame in 0..8 {
        for (i, (app, crowd)) in apps.iter_mut().enumerate() {
            if frame > 0 {
                move_targets(app, crowd, frame);
            }
            if frame == 4 {
                // A settings change (the batch stage is rebuilt) and a longer forearm.
                let e = crowd[1].limbs[0];
                let world = app.world_mut();
                if i == 0 {
                    world.get_mut::<IkLimb>(e).unwrap().settings.flex_max = 1.5;
                } else {
                    world.get_mut::<IkLimbBatch>(e).unwrap().limbs[0]
                        .settings
                        .flex_max = 1.5;
                }
                let hand = crowd[2].bones[12];
                world.get_mut::<Transform>(hand).unwrap().translation *= 1.1;
            }
            app.update();
        }
        let [(a, crowd_a), (b, crowd_b)] = &apps;
        for (c, (ca, cb)) in crowd_a.iter().zip(crowd_b).enumerate() {
            for (&ba, &bb) in ca.bones.iter().zip(&cb.bones) {
                let (pa, pb) = (world_pos(a, ba), world_pos(b, bb));
                assert!(pb.is_finite());
                let d = pa.distance(pb);
                worst = worst.max(d);
                assert!(
                    d <= TOLERANCE,
                    "frame {frame}: a bone is {d} from the limbs' pose"
                );
            }
            let stage = status(b, cb.limbs[0]);
            assert!(
                stage.solved && stage.last_error.is_none(),
                "frame {frame}: {stage:?}"
            );
            assert_eq!(stage.residuals.len(), 4, "one residual per limb");
            for (k, limb) in LIMBS.iter().enumerate() {
                let (tip_a, tip_b) = (ca.bones[limb[2]], cb.bones[limb[2]]);
                let (ta, tb) = (ca.targets[k], cb.targets[k]);
                let (da, db) = (
                    world_pos(a, tip_a).distance(world_pos(a, ta)),
                    world_pos(b, tip_b).distance(world_pos(b, tb)),
                );
                assert!(
                    (da - db).abs() <= TOLERANCE,
                    "frame {frame}, character {c}, limb {k}: tip {db} from its target, the \
                     limb stage's {da}"
                );
                let limb_status = status(a, ca.limbs[k]);
                if limb_status.solved {
                    let (ra, rb) = (limb_status.position_residual, stage.residuals[k]);
                    assert!(
                        (ra - rb).abs() <= TOLERANCE,
                        "frame {frame}, character {c}, limb {k}: residual {rb} vs {ra}"
                    );
                }
            }
        }
    }
    // The goals moved the limbs away from the rest pose (not a comparison of two rest poses).
    let (a, crowd_a) = &apps[0];
    let rest = Vec3::from(POSITIONS[LIMBS[0][2]].1);
    let root = world_pos(a, crowd_a[0].root);
    assert!(world_pos(a, crowd_a[0].bones[LIMBS[0][2]]).distance(root + rest) > 1e-2);
    println!("worst bone difference {worst:e} (tolerance {TOLERANCE:e})");
}
