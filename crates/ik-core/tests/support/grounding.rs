//! The grounding course (shared by `tests/grounding.rs` and `benches/grounding.rs`): a
//! character stands, then a character controller carries it forward at walking speed across a
//! ground (a 20° slope, ±8 cm sine ground, 18 cm stairs up or down, an 18 cm step edge along or
//! across the walking direction), with a [`GroundingStage`] on both legs, the ground probed
//! under each foot every frame, and the result measured on the solved pose by forward
//! kinematics: joint turns per frame, the pelvis' vertical acceleration in the world (next to
//! the controller's own), planted feet's distance from their ground and slide per frame, and
//! how soon a still input gives a bit-identical output.
//!
//! Two inputs: the rest pose sliding along with the controller, and a procedural stepping clip
//! (the feet lift and plant alternately, each planted foot still in the world while the root
//! moves; made with the analytic two-bone solver on the rig, so any bone axes work).
//!
//! Distances are in "human metres" (the rig's leg length over 0.9 m): a rig in centimetres
//! walks the same course.

#![allow(dead_code)]

use std::rc::Rc;

use ik_core::analytic::{LimbGoal, TwoBoneIk};
use ik_core::glam::Vec3;
use ik_core::grounding::{FootGround, GroundHit, GroundingStage, Leg};
use ik_core::humanoid::{BodyFrame, HumanoidBone as B};
use ik_core::stack::{IkStack, StageOutcome};
use ik_core::{BoneTransform, Pose};
use ik_test_rigs::{RestAxes, RigConvention, test_rig};

use crate::gameplay::{Rig, load_skeleton};

/// Frames per second.
pub const HZ: f32 = 60.0;
/// Frame time.
pub const DT: f32 = 1.0 / HZ;
/// Length of a run, frames (20 s).
pub const FRAMES: usize = 1200;
/// Frames the character stands before the controller moves it (4 s).
pub const STAND: usize = 240;
/// The controller's speed once moving (human m/s; it starts at once, as a game's would).
pub const SPEED: f32 = 0.5;
/// Riser of the stairs and of the step edges (human m).
pub const RISER: f32 = 0.18;
/// Tread of the stairs (human m).
pub const TREAD: f32 = 0.3;
/// Number of stairs.
pub const STAIRS: u32 = 16;
/// Where the stairs / the edge across start ahead of the standing character (human m).
pub const FIRST_EDGE: f32 = 1.0;
/// The stepping clip: distance the root travels per cycle (each foot steps once; human m).
pub const STRIDE: f32 = 0.55;
/// The stepping clip: fraction of a cycle a foot is planted.
pub const STANCE: f32 = 0.6;
/// The stepping clip: the swinging foot's lift (human m; above the release height, so a
/// swinging foot's grounding weight reaches 0).
pub const LIFT: f32 = 0.12;
/// The stepping clip: how far the pelvis is lowered (human m), so a stride's legs reach.
pub const CROUCH: f32 = 0.06;
/// A planted foot's largest distance from its ground (human m) outside a height blend; a
/// blend smaller than this counts as none.
pub const MAX_GAP: f32 = 1e-3;
/// The stepping clip: the pelvis' bob (human m), twice a cycle.
pub const BOB: f32 = 0.012;

/// The ground a run crosses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ground {
    /// A 20° slope up the walking direction.
    Slope,
    /// ±8 cm sine ground (2 m waves along, 3 m across; slopes up to 17°).
    Sine,
    /// 18 cm risers, 30 cm treads, up.
    StairsUp,
    /// The same, down.
    StairsDown,
    /// An 18 cm drop-off running along the walking direction, 4 cm beside the left foot,
    /// slanting (1 cm per m) so that the foot crosses it 4 m on.
    EdgeAlong,
    /// An 18 cm drop-off across the walking direction, 1 m ahead.
    EdgeAcross,
}

impl Ground {
    /// Every ground.
    pub const ALL: [Self; 6] = [
        Self::Slope,
        Self::Sine,
        Self::StairsUp,
        Self::StairsDown,
        Self::EdgeAlong,
        Self::EdgeAcross,
    ];

    /// Whether the ground is smooth (no height change under a foot).
    pub fn smooth(self) -> bool {
        matches!(self, Self::Slope | Self::Sine)
    }

    /// Height (human m) at `(u, v)` (forward, left; human m) and its gradient `(dh/du,
    /// dh/dv)`; `edge` is the lateral position of the edge along (at `u = 0`).
    pub fn height(self, u: f32, v: f32, edge: f32) -> (f32, f32, f32) {
        use core::f32::consts::TAU;
        match self {
            Self::Slope => {
                let t = 20f32.to_radians().tan();
                (t * u, t, 0.0)
            }
            Self::Sine => {
                let (ku, kv) = (TAU / 2.0, TAU / 3.0);
                let x = ku * u + kv * v;
                (0.08 * x.sin(), 0.08 * ku * x.cos(), 0.08 * kv * x.cos())
            }
            Self::StairsUp | Self::StairsDown => {
                let k = ((u - FIRST_EDGE) / TREAD).floor() + 1.0;
                let h = RISER * k.clamp(0.0, STAIRS as f32);
                (if self == Self::StairsUp { h } else { -h }, 0.0, 0.0)
            }
            Self::EdgeAlong => {
                let line = edge - 0.04 + 0.01 * u;
                (if v > line { RISER } else { 0.0 }, 0.0, 0.0)
            }
            Self::EdgeAcross => (if u < FIRST_EDGE { RISER } else { 0.0 }, 0.0, 0.0),
        }
    }

    /// The height the controller carries the root at, at `u` (human m): the ground under the
    /// root on smooth ground; over an edge or a stair a ramp eased over one tread (C², as a
    /// capsule glides over a stair collider).
    pub fn controller(self, u: f32) -> f32 {
        let ease = |edge: f32| {
            let x = ((u - edge) / TREAD + 0.5).clamp(0.0, 1.0);
            x * x * x * (x * (x * 6.0 - 15.0) + 10.0)
        };
        match self {
            Self::Slope | Self::Sine => self.height(u, 0.0, 0.0).0,
            Self::StairsUp | Self::StairsDown => {
                let h: f32 = (0..STAIRS)
                    .map(|k| RISER * ease(FIRST_EDGE + TREAD * k as f32))
                    .sum();
                if self == Self::StairsUp { h } else { -h }
            }
            Self::EdgeAlong => 0.0,
            Self::EdgeAcross => RISER * (1.0 - ease(FIRST_EDGE)),
        }
    }
}

/// The animated input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The rest pose, carried by the controller.
    Rest,
    /// The procedural stepping clip.
    Stepping,
}

/// The test rigs of every naming convention in every rest-axis style, and the characters in
/// `assets/` (made by others, CC0, and the project's own).
///
/// `GROUNDING_RIG=name` keeps only the rigs whose name contains `name` (for tracing one).
pub fn course_rigs() -> Vec<Rig> {
    let only = std::env::var("GROUNDING_RIG").ok();
    let mut out = course_rigs_all();
    if let Some(only) = only {
        out.retain(|r| r.name.contains(&only));
    }
    out
}

fn course_rigs_all() -> Vec<Rig> {
    let mut out = Vec::new();
    for c in RigConvention::ALL {
        for a in [
            RestAxes::PlusY,
            RestAxes::PlusX,
            RestAxes::MinusZ,
            RestAxes::Identity,
        ] {
            out.extend(Rig::new(format!("{c:?}/{a:?}"), test_rig(c, a)));
        }
    }
    for file in CHARACTERS {
        let skeleton = load_skeleton(file).expect("bundled character loads");
        out.push(Rig::new(file, skeleton).unwrap_or_else(|| panic!("{file} maps to a humanoid")));
    }
    out
}

/// The characters in `assets/` whose skeleton maps to a humanoid by its names (the VRM's maps
/// only through its file's humanoid table, which the test loader does not read; the Quaternius
/// worker's feet are detached from its legs, a set-up of its own, `tests/detached_feet.rs`; the
/// robot's foot joints map to its lower legs' end bones, which the full-body solver the rig
/// fixture builds does not take).
pub const CHARACTERS: [&str; 3] = [
    "kaykit_mannequin.glb",
    "ual_mannequin_f.glb",
    "character.glb",
];

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

/// The distance (human m) the controller has carried the root at frame `f`.
pub fn distance(f: usize) -> f32 {
    SPEED * f.saturating_sub(STAND) as f32 * DT
}

/// A rig's course input: the animated pose per frame and the world frame.
pub struct Clip {
    /// The animated pose per frame.
    pub poses: Vec<Pose>,
    /// The world: up (the stage's), forward and left (the body's, across up).
    pub frame: BodyFrame,
    /// Human metres → model units.
    pub scale: f32,
    /// The legs.
    pub legs: Vec<Leg>,
    /// The left foot's lateral position (human m), for [`Ground::EdgeAlong`].
    pub left_foot: f32,
    /// Which input.
    pub input: Input,
}

impl Clip {
    /// The clip of `input` on `rig`, [`FRAMES`] frames.
    pub fn new(rig: &Rig, input: Input) -> Rc<Self> {
        let legs = legs(rig);
        let stage = GroundingStage::try_new(&rig.skeleton, &legs, None).expect("grounding");
        let body = BodyFrame::from_rest(&rig.skeleton, &rig.map).expect("body frame");
        let up = stage.up();
        let forward = (body.forward - up * body.forward.dot(up)).normalize();
        let frame = BodyFrame {
            up,
            left: up.cross(forward),
            forward,
        };
        let sk = &rig.skeleton;
        let rest = sk.rest_pose();
        let rest_model = sk.rest_model_transforms();
        let s = rig.scale;
        let left_foot = rest_model[legs[0].foot].translation.dot(frame.left) / s;
        let poses = match input {
            Input::Rest => vec![rest; FRAMES],
            Input::Stepping => {
                let iks: Vec<TwoBoneIk> = legs
                    .iter()
                    .map(|l| TwoBoneIk::try_new(sk, l.upper, l.lower, l.foot).expect("leg"))
                    .collect();
                let pelvis = stage.pelvis();
                let pelvis_parent = sk
                    .parent(pelvis)
                    .map_or(BoneTransform::IDENTITY, |p| rest_model[p]);
                (0..FRAMES)
                    .map(|f| {
                        let mut pose = rest.clone();
                        let p = distance(f) / STRIDE;
                        let bob = BOB * (1.0 - (2.0 * core::f32::consts::TAU * p).cos()) / 2.0;
                        let lower = frame.up * (-(CROUCH + bob) * s);
                        pose.translations[pelvis] +=
                            pelvis_parent.rotation.inverse() * lower / pelvis_parent.scale;
                        for (i, (l, ik)) in legs.iter().zip(&iks).enumerate() {
                            let (fwd, lift) = step_offset(p + 0.5 * i as f32);
                            let ankle = rest_model[l.foot].translation
                                + (frame.forward * fwd + frame.up * lift) * s;
                            let goal =
                                LimbGoal::new(ankle).with_orientation(rest_model[l.foot].rotation);
                            let parent = sk
                                .parent(l.upper)
                                .map_or(BoneTransform::IDENTITY, |b| sk.model_transform(&pose, b));
                            ik.solve_with_parent(sk, &mut pose, &goal, &parent)
                                .expect("clip leg solves");
                        }
                        pose
                    })
                    .collect()
            }
        };
        Rc::new(Self {
            poses,
            frame,
            scale: s,
            legs,
            left_foot,
            input,
        })
    }
}

/// A foot's offset from its rest position in the stepping clip (human m, forward and up) at
/// the foot's cycle phase `p`: planted (moving back at the root's speed, so still in the world)
/// for [`STANCE`] of the cycle, then swung forward (smoothstep) with a lift of [`LIFT`].
pub fn step_offset(p: f32) -> (f32, f32) {
    let q = p.rem_euclid(1.0);
    let (along, lift) = if q < STANCE {
        (0.0, 0.0)
    } else {
        let x = (q - STANCE) / (1.0 - STANCE);
        let s = (core::f32::consts::PI * x).sin();
        (x * x * (3.0 - 2.0 * x), LIFT * s * s)
    };
    (STRIDE * (along - q + STANCE / 2.0), lift)
}

/// One run: a clip on a ground, and the stack.
pub struct Run {
    /// The stack (one grounding stage).
    pub stack: IkStack,
    /// The input.
    pub clip: Rc<Clip>,
    /// The ground.
    pub ground: Ground,
    /// The model root's world position per frame.
    pub roots: Vec<Vec3>,
    probes: Vec<(Vec3, Vec3)>,
}

impl Run {
    /// `clip` on `ground` for `rig`.
    pub fn new(rig: &Rig, clip: &Rc<Clip>, ground: Ground) -> Self {
        let stage = GroundingStage::try_new(&rig.skeleton, &clip.legs, None).expect("grounding");
        let mut stack = IkStack::new(rig.skeleton.clone());
        stack.push(stage).expect("push");
        let (fr, s) = (clip.frame, clip.scale);
        let roots = (0..FRAMES)
            .map(|f| {
                let d = distance(f);
                (fr.forward * d + fr.up * ground.controller(d)) * s
            })
            .collect();
        Self {
            stack,
            clip: Rc::clone(clip),
            ground,
            roots,
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

    /// The ground hit under world point `p` (model units; the animation's ground level added).
    fn hit(&self, level: f32, p: Vec3) -> GroundHit {
        let (fr, s) = (self.clip.frame, self.clip.scale);
        let (u, v) = (p.dot(fr.forward) / s, p.dot(fr.left) / s);
        let (h, du, dv) = self.ground.height(u, v, self.clip.left_foot);
        let normal = (fr.up - fr.forward * du - fr.left * dv).normalize();
        let point = p - fr.up * p.dot(fr.up) + fr.up * (level + h * s);
        GroundHit::new(point, normal)
    }

    /// Runs frame `f`: the input pose, the root, the ground under each foot's probes, solve.
    pub fn step(&mut self, f: usize) {
        self.stack.set_input(&self.clip.poses[f]).expect("input");
        let root = self.roots[f];
        let (skeleton, buffer, slots) = self.stack.parts_mut();
        let stage: &mut GroundingStage = slots[0].stage.as_custom_mut().expect("grounding");
        stage.dt = DT;
        stage.model_to_world = BoneTransform::from_translation(root);
        stage.probe_points(skeleton, buffer, &mut self.probes);
        let level = stage.ground_level();
        let mut ground = [FootGround::NONE; 2];
        for (g, &(ankle, ball)) in ground.iter_mut().zip(&self.probes) {
            let hit = |p: Vec3| {
                let h = self.hit(level, p + root);
                GroundHit::new(h.point - root, h.normal)
            };
            *g = FootGround {
                heel: Some(hit(ankle)),
                toe: Some(hit(ball)),
            };
        }
        let (_, _, slots) = self.stack.parts_mut();
        let stage: &mut GroundingStage = slots[0].stage.as_custom_mut().expect("grounding");
        stage.ground.copy_from_slice(&ground);
        self.stack.solve();
    }

    /// The solved foot's contact gap in model units, by forward kinematics on the output
    /// against the ground under the solved joints: the smaller of the ankle's and the ball's
    /// distance from the ground plane along its normal minus the height it keeps there (its
    /// animated height above the animation's ground, at least its rest height).
    pub fn gap(&mut self, f: usize, leg: usize) -> f32 {
        let root = self.roots[f];
        let l = self.clip.legs[leg];
        let (rest_a, rest_b) = self.stage().rest_heights(leg).expect("leg");
        let level = self.stage().ground_level();
        let up = self.stage().up();
        let sk = self.stack.skeleton();
        let pose = &self.clip.poses[f];
        let anim_a = sk.model_transform(pose, l.foot).translation;
        let anim_b = l
            .toe
            .map_or(anim_a, |t| sk.model_transform(pose, t).translation);
        let want_a = (anim_a.dot(up) - level).max(rest_a);
        let want_b = (anim_b.dot(up) - level).max(rest_b);
        let out_a = self.stack.model_transform(l.foot).translation;
        let out_b = l
            .toe
            .map_or(out_a, |t| self.stack.model_transform(t).translation);
        let gap = |p: Vec3, want: f32| {
            let g = self.hit(level, p + root);
            (p + root - g.point).dot(g.normal) - want
        };
        gap(out_a, want_a).min(gap(out_b, want_b))
    }

    /// Runs the whole course and measures it.
    pub fn measure(&mut self) -> Measured {
        let s = self.clip.scale;
        let up = self.clip.frame.up;
        let mut m = Measured::default();
        let trace = std::env::var_os("GROUNDING_TRACE").is_some();
        let mut prev = self.clip.poses[0].clone();
        let mut prev_ankle = [Vec3::ZERO; 2];
        let mut prev_planted = [false; 2];
        let mut pelvis = [[0.0f32; 2]; 3];
        let p = self.stage().pelvis();
        let accel = |w: [[f32; 2]; 3], k: usize| (w[2][k] - 2.0 * w[1][k] + w[0][k]) * HZ * HZ;
        for f in 0..FRAMES {
            self.step(f);
            match self.stack.slot(0).map(|s| &s.outcome) {
                Some(StageOutcome::Solved(r)) => {
                    m.max_residual = m.max_residual.max(r.position_residual() / s);
                }
                other => panic!("grounding failed at frame {f}: {other:?}"),
            }
            // Joint turns: every bone's local rotation against the last frame.
            let out = self.stack.pose();
            if f > 0 {
                for (b, (a, c)) in out.rotations.iter().zip(&prev.rotations).enumerate() {
                    let turn = a.angle_between(*c).to_degrees();
                    if turn > m.max_turn {
                        (m.max_turn, m.turn_at) = (turn, (f, b));
                    }
                }
                if f < STAND && out != &prev {
                    m.still_after = f + 1;
                    if trace {
                        let moved: Vec<(usize, f32, f32)> = (0..out.rotations.len())
                            .filter(|&b| {
                                out.rotations[b] != prev.rotations[b]
                                    || out.translations[b] != prev.translations[b]
                            })
                            .map(|b| {
                                (
                                    b,
                                    out.rotations[b].angle_between(prev.rotations[b]),
                                    out.translations[b].distance(prev.translations[b]),
                                )
                            })
                            .collect();
                        println!("{f:4} still input, output moved: {moved:?}");
                    }
                }
            }
            prev.copy_from(out);
            // The pelvis in the world: solved, and as the controller carries the animation.
            let root = self.roots[f].dot(up);
            let solved = self.stack.model_transform(p).translation.dot(up);
            let anim = self
                .stack
                .skeleton()
                .model_transform(&self.clip.poses[f], p)
                .translation
                .dot(up);
            pelvis = [
                pelvis[1],
                pelvis[2],
                [(root + solved) / s, (root + anim) / s],
            ];
            if f >= 2 {
                let (a, c) = (accel(pelvis, 0).abs(), accel(pelvis, 1).abs());
                if a > m.max_pelvis_accel {
                    (m.max_pelvis_accel, m.pelvis_at) = (a, f);
                }
                m.max_controller_accel = m.max_controller_accel.max(c);
            }
            if trace {
                let out = self.stage().output().clone();
                println!(
                    "{f:4} pelvis {:+.5} accel {:+8.2} ctrl {:+6.2} ground {:+.4} reach {:+.4} | {}",
                    out.pelvis_offset.dot(up) / s,
                    if f >= 2 { accel(pelvis, 0) } else { 0.0 },
                    if f >= 2 { accel(pelvis, 1) } else { 0.0 },
                    out.pelvis_ground / s,
                    out.pelvis_reach / s,
                    out.feet
                        .iter()
                        .map(|x| format!(
                            "w {:.2} pl {} toe {} off {:+.4} blend {:+.4} n {:.4}",
                            x.weight,
                            u8::from(x.planted),
                            u8::from(x.on_toe),
                            x.offset / s,
                            x.blend / s,
                            x.normal.angle_between(up).to_degrees()
                        ))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
            }
            for leg in 0..2 {
                let state = self.stage().output().feet[leg];
                let ankle = self
                    .stack
                    .model_transform(self.clip.legs[leg].foot)
                    .translation
                    + self.roots[f];
                m.foot_frames += 1;
                // Blending across a height change: the foot is off its ground by the
                // blend (bounded by the stage's max step height), measured apart.
                let blending = state.blend.abs() > MAX_GAP * s;
                m.max_blend = m.max_blend.max(state.blend.abs() / s);
                if state.planted {
                    m.planted_frames += 1;
                    if blending {
                        m.blend_frames += 1;
                    } else {
                        let g = self.gap(f, leg).abs() / s;
                        if g > m.max_gap {
                            (m.max_gap, m.gap_at) = (g, f);
                        }
                    }
                    if prev_planted[leg] {
                        let d = ankle - prev_ankle[leg];
                        let slide = (d - up * d.dot(up)).length() / s;
                        if slide > m.max_slide {
                            (m.max_slide, m.slide_at) = (slide, f);
                        }
                    }
                }
                prev_planted[leg] = state.planted;
                prev_ankle[leg] = ankle;
            }
        }
        m
    }
}

/// What a run measured (human metres, degrees, seconds).
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured {
    /// The largest turn of a joint (local rotation) in one frame, degrees, and where (frame,
    /// bone).
    pub max_turn: f32,
    pub turn_at: (usize, usize),
    /// The solved pelvis' largest vertical acceleration in the world (m/s²) and its frame.
    pub max_pelvis_accel: f32,
    pub pelvis_at: usize,
    /// The same of the animated pelvis as the controller carries it.
    pub max_controller_accel: f32,
    /// Planted feet (not blending across a height change): the largest distance from their
    /// ground (m) and its frame.
    pub max_gap: f32,
    pub gap_at: usize,
    /// Planted feet: the largest slide in one frame (m) and its frame.
    pub max_slide: f32,
    pub slide_at: usize,
    /// The largest height blend left on a foot (m).
    pub max_blend: f32,
    /// Foot frames, planted ones, planted ones blending.
    pub foot_frames: usize,
    pub planted_frames: usize,
    pub blend_frames: usize,
    /// The standing part: the first frame from which the output no longer changes.
    pub still_after: usize,
    /// The stage's largest position residual (m).
    pub max_residual: f32,
}
