//! Grounding walks (shared by `tests/grounding.rs` and `benches/grounding.rs`): the procedural
//! walk of `gameplay.rs` carried across a seeded height field or a staircase by a character
//! controller (the model root glides along a smoothed ground height), with a
//! [`GroundingStage`] on both legs, the ground probed under each foot every frame and the
//! result measured on the solved pose by forward kinematics.
//!
//! Distances are in "human metres" (the rig's leg length over 0.9 m).

#![allow(dead_code)]

use ik_core::glam::Vec3;
use ik_core::grounding::{FootGround, GroundHit, GroundingStage, Leg};
use ik_core::humanoid::{BodyFrame, HumanoidBone as B};
use ik_core::stack::{IkStack, Stage};
use ik_core::{BoneTransform, Pose};

use crate::gameplay::{Rig, walk_pose};

/// The ground a walk crosses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Terrain {
    /// Smooth seeded bumps, ±6 cm, slopes up to about 20°.
    HeightField(u32),
    /// 20 cm steps, 40 cm treads, starting 1 m ahead, up `steps` steps then flat.
    Stairs {
        /// Number of steps up.
        steps: u32,
    },
}

impl Terrain {
    /// Height (human metres) at `(u, v)` (forward, left; human metres) and the slope's
    /// gradient `(dh/du, dh/dv)`.
    pub fn height(self, u: f32, v: f32) -> (f32, f32, f32) {
        match self {
            Self::HeightField(seed) => {
                let s = seed as f32 * 1.618_034;
                let mut h = 0.0;
                let (mut du, mut dv) = (0.0, 0.0);
                for (k, (a, fu, fv)) in [(0.035, 2.1, 0.7), (0.02, 3.3, -1.9), (0.012, 5.1, 2.7)]
                    .into_iter()
                    .enumerate()
                {
                    let ph = s * (k as f32 + 1.0);
                    let x = fu * u + fv * v + ph;
                    h += a * x.sin();
                    du += a * fu * x.cos();
                    dv += a * fv * x.cos();
                }
                (h, du, dv)
            }
            Self::Stairs { steps } => {
                let k = ((u - 1.0) / 0.4).floor() + 1.0;
                (0.2 * k.clamp(0.0, steps as f32), 0.0, 0.0)
            }
        }
    }

    /// The height a character controller carries the model root at, at `u` (human metres):
    /// the ground itself on the height field, a smooth ramp over the stairs (each step edge
    /// eased over one tread, C²), as a capsule on a stair collider would.
    pub fn controller_height(self, u: f32) -> f32 {
        match self {
            Self::HeightField(_) => self.height(u, 0.0).0,
            Self::Stairs { steps } => (0..steps)
                .map(|k| {
                    let edge = 1.0 + 0.4 * k as f32;
                    let x = ((u - edge) / 0.4 + 0.5).clamp(0.0, 1.0);
                    0.2 * x * x * x * (x * (x * 6.0 - 15.0) + 10.0)
                })
                .sum(),
        }
    }
}

/// The legs of a humanoid rig (with toes where mapped).
pub fn legs(rig: &Rig) -> Vec<Leg> {
    let m = &rig.map;
    [
        (B::LeftUpperLeg, B::LeftLowerLeg, B::LeftFoot, B::LeftToes),
        (
            B::RightUpperLeg,
            B::RightLowerLeg,
            B::RightFoot,
            B::RightToes,
        ),
    ]
    .into_iter()
    .map(|(u, l, f, t)| {
        let leg = Leg::new(
            m.get(u).expect("mapped"),
            m.get(l).expect("mapped"),
            m.get(f).expect("mapped"),
        );
        match m.get(t) {
            Some(t) => leg.with_toe(t),
            None => leg,
        }
    })
    .collect()
}

/// A walk prepared on a rig: the animated poses, the root's path and the stack.
pub struct Walk {
    /// The stack (one grounding stage).
    pub stack: IkStack,
    /// The animated pose per frame.
    pub poses: Vec<Pose>,
    /// The model root's world position per frame.
    pub roots: Vec<Vec3>,
    /// The terrain.
    pub terrain: Terrain,
    /// The rig's body frame.
    pub frame: BodyFrame,
    /// Human metres → model units.
    pub scale: f32,
    /// The legs.
    pub legs: Vec<Leg>,
    probes: Vec<(Vec3, Vec3)>,
}

/// World height of the ground at world point `p` along the body frame's up, its normal, and
/// the hit point under `p` (model units; the animation's ground level added).
fn ground_at(terrain: Terrain, frame: &BodyFrame, scale: f32, level: f32, p: Vec3) -> GroundHit {
    let (u, v) = (p.dot(frame.forward) / scale, p.dot(frame.left) / scale);
    let (h, du, dv) = terrain.height(u, v);
    let normal = (frame.up - frame.forward * du - frame.left * dv).normalize();
    let point = p - frame.up * p.dot(frame.up) + frame.up * (level + h * scale);
    GroundHit::new(point, normal)
}

impl Walk {
    /// `frames` frames at 60 Hz of the walk on `rig` across `terrain`.
    pub fn new(rig: &Rig, terrain: Terrain, frames: usize) -> Self {
        let solver = rig.solver();
        let frame = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("body frame");
        let legs = legs(rig);
        let stage = GroundingStage::try_new(&rig.skeleton, &legs, None).expect("grounding");
        // The world's up is the stage's (derived from the rest legs), forward the body's.
        let up = stage.up();
        let forward = (frame.forward - up * frame.forward.dot(up)).normalize();
        let frame = BodyFrame {
            up,
            left: up.cross(forward),
            forward,
        };
        let mut stack = IkStack::new(rig.skeleton.clone());
        stack.push(Stage::custom(stage)).expect("push");
        let poses: Vec<Pose> = (0..frames)
            .map(|f| walk_pose(rig, &solver, f as f32 / 60.0 * 0.9))
            .collect();
        // Walking speed: the stance foot's travel (most forward to most backward) over half a
        // cycle.
        let foot = legs[0].foot;
        let cycle = (60.0 / 0.9) as usize;
        let along: Vec<f32> = poses[..cycle.min(frames)]
            .iter()
            .map(|p| {
                rig.skeleton
                    .model_transform(p, foot)
                    .translation
                    .dot(frame.forward)
            })
            .collect();
        let (lo, hi) = along
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        let speed = (hi - lo) / (0.5 / 0.9);
        let scale = rig.scale;
        // The controller: the root glides at the walking speed at the controller's height.
        let roots = (0..frames)
            .map(|f| {
                let d = speed * f as f32 / 60.0;
                frame.forward * d + frame.up * terrain.controller_height(d / scale) * scale
            })
            .collect();
        Self {
            stack,
            poses,
            roots,
            terrain,
            frame,
            scale,
            legs,
            probes: Vec::with_capacity(2),
        }
    }

    /// The grounding stage.
    pub fn stage(&mut self) -> &mut GroundingStage {
        self.stack
            .slot_mut(0)
            .expect("slot")
            .stage
            .as_custom_mut()
            .expect("grounding")
    }

    /// Runs frame `f`: the input pose, the root, the ground under each foot's probe, solve.
    pub fn step(&mut self, f: usize) {
        self.stack.set_input(&self.poses[f]).expect("input");
        let root = self.roots[f];
        let (terrain, frame, scale) = (self.terrain, self.frame, self.scale);
        let (skeleton, buffer, slots) = self.stack.parts_mut();
        let stage: &mut GroundingStage = slots[0].stage.as_custom_mut().expect("grounding");
        stage.dt = 1.0 / 60.0;
        stage.model_to_world = BoneTransform::from_translation(root);
        stage.probe_points(skeleton, buffer, &mut self.probes);
        let level = stage.ground_level();
        for (i, &(ankle, ball)) in self.probes.iter().enumerate() {
            let hit = |p: Vec3| {
                let g = ground_at(terrain, &frame, scale, level, p + root);
                GroundHit::new(g.point - root, g.normal)
            };
            stage.ground[i] = FootGround {
                heel: Some(hit(ankle)),
                toe: Some(hit(ball)),
            };
        }
        self.stack.solve();
    }

    /// The solved foot's contact gaps (ankle, ball) in model units, measured by forward
    /// kinematics on the output against the terrain under the solved joints: each joint's
    /// distance from the ground plane along its normal minus the height it should keep
    /// (its animated height, at least its rest height).
    pub fn gaps(&mut self, f: usize, leg: usize) -> (f32, f32) {
        let root = self.roots[f];
        let l = self.legs[leg];
        let stage: &GroundingStage = self
            .stack
            .slot_mut(0)
            .unwrap()
            .stage
            .as_custom_mut()
            .unwrap();
        let (rest_a, rest_b) = stage.rest_heights(leg).unwrap();
        let level = stage.ground_level();
        let up = stage.up();
        let sk = self.stack.skeleton();
        let anim_a = sk.model_transform(&self.poses[f], l.foot).translation;
        let anim_b = l.toe.map_or(anim_a, |t| {
            sk.model_transform(&self.poses[f], t).translation
        });
        let want_a = (anim_a.dot(up) - level).max(rest_a);
        let want_b = (anim_b.dot(up) - level).max(rest_b);
        let out_a = self.stack.model_transform(l.foot).translation;
        let out_b = l
            .toe
            .map_or(out_a, |t| self.stack.model_transform(t).translation);
        let gap = |p: Vec3, want: f32| {
            let g = ground_at(self.terrain, &self.frame, self.scale, level, p + root);
            (p + root - g.point).dot(g.normal) - want
        };
        (gap(out_a, want_a), gap(out_b, want_b))
    }

    /// The solved ankle in world space.
    pub fn ankle_world(&mut self, f: usize, leg: usize) -> Vec3 {
        self.stack.model_transform(self.legs[leg].foot).translation + self.roots[f]
    }

    /// The pelvis' height in the world this frame (model units along up), solved and
    /// animated (carried by the controller).
    pub fn pelvis_height(&mut self, f: usize) -> (f32, f32) {
        let p = self.stage().pelvis();
        let up = self.frame.up;
        let root = self.roots[f].dot(up);
        let out = self.stack.model_transform(p).translation;
        let anim = self
            .stack
            .skeleton()
            .model_transform(&self.poses[f], p)
            .translation;
        (root + out.dot(up), root + anim.dot(up))
    }
}
