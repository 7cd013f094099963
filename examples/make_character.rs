//! Generates the demo character, `assets/character.glb`: a rigged, skinned humanoid about 1.75 m tall,
//! built the way a Blender export of a Mixamo rig is built.
//!
//! ```text
//! cargo run --example make_character -- assets/character.glb
//! ```
//!
//! * **Skeleton.** Mixamo names (`mixamorig:Hips`, `mixamorig:LeftForeArm`, …) under an `Armature`
//!   node. As in Blender exports, every bone's local +Y points along the bone toward its main child, so
//!   the rest local rotations are not identity, and leaf `*_End` bones close the chains.
//! * **Mesh.** One implicit surface — a smooth union of tapered capsules and ellipsoids, each owned by a
//!   bone — polygonised with surface nets, every vertex projected back onto the surface, normals taken
//!   from the field's gradient. Each vertex carries four joint weights (normalised unsigned bytes),
//!   blended between a bone and its parent or children where their shapes meet, never across limbs.
//! * **Materials.** Skin, shirt, trousers, shoes and eyes; the primitives share one vertex buffer.
//! * **Animation.** `Idle`: a 4 s loop of breathing, arm and head sway and a weight shift in the hips,
//!   with the legs counter-rotated so the feet stay close to planted. `Walk`: a 1.2 s walk cycle in
//!   place, authored for 0.9 m/s (a planted foot moves back under the hips at that speed): heel
//!   strike, flat foot, heel rise over the ball with the toes flat, swing with the knee bent; the
//!   legs solved analytically for that foot path in the sagittal plane, the hips bobbing as low
//!   as both legs need, the arms swinging against the legs and the chest turning with them. Its
//!   directions come from the rest pose (up: hips to head top, forward: along the feet) and its
//!   heel and ball from the shoe's skinned vertices.
//!
//! The program checks its own output before writing it (node transforms reproduce the bind pose,
//! inverse bind matrices invert it, weights sum to one, triangles face outwards, and, by forward
//! kinematics on the walk's keys interpolated as a player does, each planted heel or ball stays
//! within 2 mm of its ground moving back at the walk speed). The output is
//! deterministic. The character is original work, released under CC0 (see `assets/LICENSE.md`).

use std::{f32::consts::TAU, fs, path::PathBuf, process::ExitCode};

use gltf_json as json;
use ik_core::glam::{Mat3, Mat4, Quat, Vec2, Vec3};
use json::validation::{Checked::Valid, USize64};

/// Prefix of every bone name, as in Mixamo exports.
const PREFIX: &str = "mixamorig:";
/// Edge length of the surface-nets grid, in metres.
const CELL: f32 = 0.014;
/// Length of the idle clip, in seconds.
const CLIP_SECONDS: f32 = 4.0;
/// Keyframes per second of the idle clip.
const KEYS_PER_SECOND: f32 = 10.0;

fn v(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, y, z)
}

// ---------------------------------------------------------------------------------------------
// Skeleton

/// One bone, in model space (the `Armature` node's space: +Y up, the character faces +Z, its left is +X).
struct Bone {
    name: String,
    parent: Option<usize>,
    /// Joint position.
    head: Vec3,
    /// End of the bone: the head of its main (first) child, or a continuation for leaves.
    tail: Vec3,
    /// Rest orientation: local +Y along `tail - head`.
    rotation: Quat,
}

#[derive(Default)]
struct Rig {
    bones: Vec<Bone>,
}

impl Rig {
    fn add(&mut self, name: &str, parent: Option<usize>, head: Vec3) -> usize {
        self.bones.push(Bone {
            name: format!("{PREFIX}{name}"),
            parent,
            head,
            tail: head,
            rotation: Quat::IDENTITY,
        });
        self.bones.len() - 1
    }

    fn index(&self, name: &str) -> usize {
        let full = format!("{PREFIX}{name}");
        self.bones
            .iter()
            .position(|b| b.name == full)
            .unwrap_or_else(|| panic!("no bone {full}"))
    }

    fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.bones.len()).filter(move |&c| self.bones[c].parent == Some(i))
    }

    /// Fills in tails and rest rotations once every bone has been added.
    fn finish(&mut self) {
        for i in 0..self.bones.len() {
            let main_child = self.children(i).next();
            let tail = match (main_child, self.bones[i].parent) {
                (Some(c), _) => self.bones[c].head,
                (None, Some(p)) => {
                    let parent = &self.bones[p];
                    self.bones[i].head + (parent.tail - parent.head) * 0.5
                }
                (None, None) => self.bones[i].head + Vec3::Y * 0.1,
            };
            self.bones[i].tail = tail;
            self.bones[i].rotation = bone_rotation((tail - self.bones[i].head).normalize());
        }
    }

    /// Local (parent-relative) translation and rotation of bone `i`, as written to its glTF node.
    fn local(&self, i: usize) -> (Vec3, Quat) {
        let b = &self.bones[i];
        match b.parent {
            None => (b.head, b.rotation),
            Some(p) => {
                let inv = self.bones[p].rotation.inverse();
                (
                    inv * (b.head - self.bones[p].head),
                    (inv * b.rotation).normalize(),
                )
            }
        }
    }

    /// Bind-pose global matrix of bone `i`.
    fn bind(&self, i: usize) -> Mat4 {
        Mat4::from_rotation_translation(self.bones[i].rotation, self.bones[i].head)
    }
}

/// A Blender-style bone frame: +Y along `dir`, roll chosen so +Z leans toward the front (or up, for
/// bones that themselves point forward, like feet and toes).
fn bone_rotation(dir: Vec3) -> Quat {
    let reference = if dir.z.abs() > 0.7 { Vec3::Y } else { Vec3::Z };
    let x = dir.cross(reference).normalize();
    let z = x.cross(dir);
    Quat::from_mat3(&Mat3::from_cols(x, dir, z)).normalize()
}

#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Left => "Left",
            Side::Right => "Right",
        }
    }

    /// Mirrors a left-side point to this side.
    fn m(self, p: Vec3) -> Vec3 {
        match self {
            Side::Left => p,
            Side::Right => v(-p.x, p.y, p.z),
        }
    }

    /// Mirrors a rotation given for the left side to this side.
    fn mq(self, q: Quat) -> Quat {
        match self {
            Side::Left => q,
            Side::Right => Quat::from_xyzw(q.x, -q.y, -q.z, q.w),
        }
    }
}

/// Left-side joint positions of the arm, in model space (A-pose: upper arm 45° below horizontal).
struct ArmPoints {
    shoulder: Vec3,
    arm: Vec3,
    elbow: Vec3,
    wrist: Vec3,
    /// Along the hand, from the wrist toward the finger tips.
    dir: Vec3,
    /// Across the palm, toward the thumb.
    across: Vec3,
    /// Out of the back of the hand.
    back: Vec3,
}

fn arm_points() -> ArmPoints {
    let shoulder = v(0.035, 1.425, -0.02);
    let arm = v(0.17, 1.43, -0.03);
    let down = v(1.0, -1.0, 0.0).normalize();
    let elbow = arm + down * 0.28 + v(0.0, 0.0, -0.012);
    let wrist = elbow + down * 0.25 + v(0.0, 0.0, 0.02);
    let dir = (wrist - elbow).normalize();
    let across = (Vec3::Z - dir * dir.z).normalize();
    let back = dir.cross(across).normalize();
    ArmPoints {
        shoulder,
        arm,
        elbow,
        wrist,
        dir,
        across,
        back,
    }
}

fn build_rig() -> Rig {
    let mut r = Rig::default();
    let hips = r.add("Hips", None, v(0.0, 0.98, 0.0));
    let spine = r.add("Spine", Some(hips), v(0.0, 1.075, -0.006));
    let spine1 = r.add("Spine1", Some(spine), v(0.0, 1.19, -0.012));
    let spine2 = r.add("Spine2", Some(spine1), v(0.0, 1.31, -0.012));
    let neck = r.add("Neck", Some(spine2), v(0.0, 1.465, -0.02));
    let head = r.add("Head", Some(neck), v(0.0, 1.565, -0.005));
    r.add("HeadTop_End", Some(head), v(0.0, 1.755, 0.0));
    let a = arm_points();
    for side in [Side::Left, Side::Right] {
        let s = side.name();
        let m = |p| side.m(p);
        let shoulder = r.add(&format!("{s}Shoulder"), Some(spine2), m(a.shoulder));
        let arm = r.add(&format!("{s}Arm"), Some(shoulder), m(a.arm));
        let fore = r.add(&format!("{s}ForeArm"), Some(arm), m(a.elbow));
        let hand = r.add(&format!("{s}Hand"), Some(fore), m(a.wrist));
        let knuckle = a.wrist + a.dir * 0.085;
        let i1 = r.add(&format!("{s}HandIndex1"), Some(hand), m(knuckle));
        let i2 = r.add(
            &format!("{s}HandIndex2"),
            Some(i1),
            m(knuckle + a.dir * 0.045),
        );
        r.add(
            &format!("{s}HandIndex3"),
            Some(i2),
            m(knuckle + a.dir * 0.08),
        );
        let thumb_dir = (a.dir * 0.55 + a.across * 0.75 - a.back * 0.35).normalize();
        let t0 = a.wrist + a.dir * 0.02 + a.across * 0.03 - a.back * 0.008;
        let t1 = r.add(&format!("{s}HandThumb1"), Some(hand), m(t0));
        let t2 = r.add(
            &format!("{s}HandThumb2"),
            Some(t1),
            m(t0 + thumb_dir * 0.04),
        );
        r.add(
            &format!("{s}HandThumb3"),
            Some(t2),
            m(t0 + thumb_dir * 0.072),
        );
    }
    for side in [Side::Left, Side::Right] {
        let s = side.name();
        let m = |p| side.m(p);
        let up = r.add(&format!("{s}UpLeg"), Some(hips), m(v(0.095, 0.93, 0.0)));
        let leg = r.add(&format!("{s}Leg"), Some(up), m(v(0.1, 0.505, 0.012)));
        let foot = r.add(&format!("{s}Foot"), Some(leg), m(v(0.105, 0.085, -0.025)));
        let toe = r.add(&format!("{s}ToeBase"), Some(foot), m(v(0.105, 0.035, 0.11)));
        r.add(&format!("{s}Toe_End"), Some(toe), m(v(0.105, 0.03, 0.21)));
    }
    r.finish();
    r
}

// ---------------------------------------------------------------------------------------------
// Shapes and the implicit surface

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Material {
    Skin,
    Shirt,
    Trousers,
    Shoes,
    Eyes,
    Hair,
}

impl Material {
    const ALL: [Material; 6] = [
        Material::Skin,
        Material::Shirt,
        Material::Trousers,
        Material::Shoes,
        Material::Eyes,
        Material::Hair,
    ];

    /// Linear base colour and roughness.
    fn look(self) -> ([f32; 4], f32) {
        match self {
            Material::Skin => ([0.80, 0.47, 0.33, 1.0], 0.65),
            Material::Shirt => ([0.03, 0.20, 0.42, 1.0], 0.85),
            Material::Trousers => ([0.05, 0.05, 0.07, 1.0], 0.9),
            Material::Shoes => ([0.16, 0.07, 0.03, 1.0], 0.5),
            Material::Eyes => ([0.01, 0.01, 0.012, 1.0], 0.2),
            Material::Hair => ([0.05, 0.025, 0.012, 1.0], 0.8),
        }
    }
}

enum Shape {
    /// A tapered capsule from `a` to `a + axis * len` (radii `ra`, `rb`), whose cross-section is scaled
    /// by `squash` along the frame's x and z axes (`frame` maps local to model space, local +Y = axis).
    Cone {
        a: Vec3,
        len: f32,
        ra: f32,
        rb: f32,
        inv_frame: Quat,
        squash: (f32, f32),
    },
    /// An ellipsoid with radii `r` along the axes of `inv_frame.inverse()`.
    Ellipsoid { c: Vec3, r: Vec3, inv_frame: Quat },
}

struct Part {
    shape: Shape,
    bone: usize,
    /// Smooth-union blend radius with what came before.
    blend: f32,
    /// Bounding sphere, for culling.
    center: Vec3,
    radius: f32,
}

fn cone(bone: usize, a: Vec3, b: Vec3, ra: f32, rb: f32, blend: f32) -> Part {
    cone_squashed(bone, a, b, ra, rb, blend, Vec3::Z, (1.0, 1.0))
}

/// A tapered capsule whose cross-section is scaled by `squash.1` along `thick` (made perpendicular to
/// the axis) and by `squash.0` along the third axis.
fn cone_squashed(
    bone: usize,
    a: Vec3,
    b: Vec3,
    ra: f32,
    rb: f32,
    blend: f32,
    thick: Vec3,
    squash: (f32, f32),
) -> Part {
    let axis = (b - a).normalize();
    let z = (thick - axis * axis.dot(thick)).normalize();
    let x = axis.cross(z);
    let frame = Quat::from_mat3(&Mat3::from_cols(x, axis, z)).normalize();
    Part {
        shape: Shape::Cone {
            a,
            len: (b - a).length(),
            ra,
            rb,
            inv_frame: frame.inverse(),
            squash,
        },
        bone,
        blend,
        center: (a + b) * 0.5,
        radius: (b - a).length() * 0.5 + ra.max(rb),
    }
}

fn ellipsoid(bone: usize, c: Vec3, r: Vec3, blend: f32) -> Part {
    Part {
        shape: Shape::Ellipsoid {
            c,
            r,
            inv_frame: Quat::IDENTITY,
        },
        bone,
        blend,
        center: c,
        radius: r.max_element(),
    }
}

impl Part {
    /// Approximate signed distance (negative inside).
    fn sdf(&self, p: Vec3) -> f32 {
        match self.shape {
            Shape::Cone {
                a,
                len,
                ra,
                rb,
                inv_frame,
                squash,
            } => {
                let q = inv_frame * (p - a);
                let q = v(q.x / squash.0, q.y, q.z / squash.1);
                round_cone(q, ra, rb, len) * squash.0.min(squash.1)
            }
            Shape::Ellipsoid { c, r, inv_frame } => {
                let q = inv_frame * (p - c);
                let k0 = (q / r).length();
                let k1 = (q / (r * r)).length();
                if k1 < 1e-9 {
                    -r.min_element()
                } else {
                    k0 * (k0 - 1.0) / k1
                }
            }
        }
    }
}

/// Signed distance to a capsule along +Y from the origin, radius `r1` at the bottom, `r2` at height `h`.
fn round_cone(p: Vec3, r1: f32, r2: f32, h: f32) -> f32 {
    let b = (r1 - r2) / h;
    let a = (1.0 - b * b).sqrt();
    let qx = (p.x * p.x + p.z * p.z).sqrt();
    let qy = p.y;
    let k = -b * qx + a * qy;
    if k < 0.0 {
        (qx * qx + qy * qy).sqrt() - r1
    } else if k > a * h {
        (qx * qx + (qy - h) * (qy - h)).sqrt() - r2
    } else {
        qx * a + qy * b - r1
    }
}

/// Polynomial smooth minimum with blend radius `k`.
fn smin(a: f32, b: f32, k: f32) -> f32 {
    let h = (0.5 + 0.5 * (b - a) / k).clamp(0.0, 1.0);
    b + (a - b) * h - k * h * (1.0 - h)
}

/// The shapes of the body, each owned by the bone it moves with (sizes in metres).
#[rustfmt::skip]
fn build_parts(r: &Rig) -> Vec<Part> {
    let b = |name: &str| r.index(name);
    let head = |name: &str| r.bones[r.index(name)].head;
    let mut parts = vec![
        // Pelvis, buttocks and torso.
        ellipsoid(b("Hips"), v(0.0, 0.955, -0.005), v(0.165, 0.115, 0.112), 0.04),
        ellipsoid(b("Hips"), v(0.06, 0.9, -0.045), v(0.075, 0.085, 0.07), 0.04),
        ellipsoid(b("Hips"), v(-0.06, 0.9, -0.045), v(0.075, 0.085, 0.07), 0.04),
        ellipsoid(b("Spine"), v(0.0, 1.09, -0.006), v(0.145, 0.11, 0.1), 0.05),
        ellipsoid(b("Spine1"), v(0.0, 1.21, -0.008), v(0.155, 0.12, 0.105), 0.05),
        ellipsoid(b("Spine2"), v(0.0, 1.335, 0.0), v(0.172, 0.13, 0.11), 0.05),
        ellipsoid(b("Spine2"), v(0.0, 1.405, -0.025), v(0.15, 0.065, 0.085), 0.04),
        // Neck; head with hair volume, jaw, nose and ears.
        cone(b("Neck"), v(0.0, 1.44, -0.022), v(0.0, 1.58, -0.005), 0.052, 0.047, 0.03),
        ellipsoid(b("Head"), v(0.0, 1.655, 0.012), v(0.08, 0.1, 0.095), 0.03),
        ellipsoid(b("Head"), v(0.0, 1.69, -0.008), v(0.086, 0.075, 0.098), 0.03),
        ellipsoid(b("Head"), v(0.0, 1.6, 0.032), v(0.063, 0.055, 0.07), 0.03),
        ellipsoid(b("Head"), v(0.0, 1.642, 0.106), v(0.014, 0.024, 0.02), 0.012),
        ellipsoid(b("Head"), v(0.079, 1.645, 0.0), v(0.014, 0.03, 0.02), 0.01),
        ellipsoid(b("Head"), v(-0.079, 1.645, 0.0), v(0.014, 0.03, 0.02), 0.01),
    ];
    let a = arm_points();
    for side in [Side::Left, Side::Right] {
        let s = side.name();
        let m = |p| side.m(p);
        let bn = |n: &str| b(&format!("{s}{n}"));
        let hd = |n: &str| head(&format!("{s}{n}"));
        // Arm; palm and a mitten of four fingers, flattened across the back of the hand; thumb.
        let back = m(a.back);
        let flat = (1.0, 0.42);
        let knuckle = hd("HandIndex1");
        let tip = hd("HandIndex3") - m(a.dir) * 0.02;
        let thumb_tip = hd("HandThumb3") - (hd("HandThumb3") - hd("HandThumb2")).normalize() * 0.012;
        parts.extend([
            cone(bn("Shoulder"), m(a.shoulder), m(a.arm), 0.05, 0.055, 0.04),
            cone(bn("Arm"), m(a.arm), m(a.elbow), 0.05, 0.038, 0.03),
            cone(bn("ForeArm"), m(a.elbow), m(a.wrist), 0.039, 0.029, 0.025),
            cone_squashed(bn("Hand"), m(a.wrist + a.dir * 0.012), knuckle, 0.034, 0.04, 0.015, back, flat),
            cone_squashed(bn("HandIndex1"), knuckle, hd("HandIndex2"), 0.039, 0.036, 0.012, back, flat),
            cone_squashed(bn("HandIndex2"), hd("HandIndex2"), tip, 0.036, 0.032, 0.01, back, flat),
            cone(bn("HandThumb1"), hd("HandThumb1"), hd("HandThumb2"), 0.017, 0.014, 0.012),
            cone(bn("HandThumb2"), hd("HandThumb2"), thumb_tip, 0.014, 0.012, 0.008),
        ]);
        // Thigh, shin with calf, foot with heel, toes.
        let (hip, knee, ankle) = (hd("UpLeg"), hd("Leg"), hd("Foot"));
        let calf = knee + (ankle - knee) * 0.3 + v(0.0, 0.0, -0.022);
        parts.extend([
            cone(bn("UpLeg"), hip + v(0.0, 0.02, 0.0), knee, 0.078, 0.052, 0.035),
            cone(bn("Leg"), knee, ankle, 0.05, 0.034, 0.03),
            ellipsoid(bn("Leg"), calf, v(0.043, 0.1, 0.042), 0.03),
            cone(bn("Foot"), ankle, m(v(0.105, 0.05, 0.06)), 0.038, 0.04, 0.03),
            cone_squashed(bn("Foot"), m(v(0.105, 0.045, -0.045)), hd("ToeBase"), 0.04, 0.044, 0.03, Vec3::Y, (1.0, 0.85)),
            cone_squashed(bn("ToeBase"), hd("ToeBase"), m(v(0.105, 0.03, 0.19)), 0.044, 0.036, 0.02, Vec3::Y, (1.0, 0.75)),
        ]);
    }
    parts
}

fn field(parts: &[Part], p: Vec3) -> f32 {
    let mut d = 1.0_f32;
    for part in parts {
        if (p - part.center).length() - part.radius > d + part.blend {
            continue;
        }
        d = smin(d, part.sdf(p), part.blend);
    }
    d
}

fn gradient(parts: &[Part], p: Vec3) -> Vec3 {
    let h = CELL * 0.25;
    let dx = field(parts, p + Vec3::X * h) - field(parts, p - Vec3::X * h);
    let dy = field(parts, p + Vec3::Y * h) - field(parts, p - Vec3::Y * h);
    let dz = field(parts, p + Vec3::Z * h) - field(parts, p - Vec3::Z * h);
    v(dx, dy, dz) / (2.0 * h)
}

// ---------------------------------------------------------------------------------------------
// Surface nets

struct Surface {
    positions: Vec<Vec3>,
    normals: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
}

fn polygonise(parts: &[Part]) -> Surface {
    let mut lo = Vec3::splat(f32::MAX);
    let mut hi = Vec3::splat(f32::MIN);
    for p in parts {
        lo = lo.min(p.center - Vec3::splat(p.radius));
        hi = hi.max(p.center + Vec3::splat(p.radius));
    }
    let origin = lo - Vec3::splat(2.0 * CELL);
    let dims = ((hi - origin) / CELL).ceil().as_uvec3() + 3;
    let (nx, ny, nz) = (dims.x as usize, dims.y as usize, dims.z as usize);
    let at = |i: usize, j: usize, k: usize| i + nx * (j + ny * k);
    let corner = |i: usize, j: usize, k: usize| origin + v(i as f32, j as f32, k as f32) * CELL;

    let mut values = vec![0.0_f32; nx * ny * nz];
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                values[at(i, j, k)] = field(parts, corner(i, j, k));
            }
        }
    }

    // One vertex per cell that the surface crosses, at the mean of its edge crossings.
    let cells = |i: usize, j: usize, k: usize| i + (nx - 1) * (j + (ny - 1) * k);
    let mut cell_vertex = vec![u32::MAX; (nx - 1) * (ny - 1) * (nz - 1)];
    let mut positions = Vec::new();
    const EDGES: [(usize, usize); 12] = [
        (0, 1),
        (2, 3),
        (4, 5),
        (6, 7),
        (0, 2),
        (1, 3),
        (4, 6),
        (5, 7),
        (0, 4),
        (1, 5),
        (2, 6),
        (3, 7),
    ];
    for k in 0..nz - 1 {
        for j in 0..ny - 1 {
            for i in 0..nx - 1 {
                let mut f = [0.0_f32; 8];
                let mut p = [Vec3::ZERO; 8];
                for (c, (fc, pc)) in f.iter_mut().zip(p.iter_mut()).enumerate() {
                    let (ci, cj, ck) = (i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
                    *fc = values[at(ci, cj, ck)];
                    *pc = corner(ci, cj, ck);
                }
                let inside = f.iter().filter(|&&x| x < 0.0).count();
                if inside == 0 || inside == 8 {
                    continue;
                }
                let mut sum = Vec3::ZERO;
                let mut n = 0.0;
                for (a, b) in EDGES {
                    if (f[a] < 0.0) != (f[b] < 0.0) {
                        let t = f[a] / (f[a] - f[b]);
                        sum += p[a] + (p[b] - p[a]) * t;
                        n += 1.0;
                    }
                }
                cell_vertex[cells(i, j, k)] = positions.len() as u32;
                positions.push(sum / n);
            }
        }
    }

    // One quad per grid edge that the surface crosses, joining the four cells around the edge.
    let mut triangles = Vec::new();
    let n = [nx, ny, nz];
    for k in 1..nz - 1 {
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let base = [i, j, k];
                let f0 = values[at(i, j, k)];
                for axis in 0..3 {
                    let mut next = base;
                    next[axis] += 1;
                    if next[axis] >= n[axis] {
                        continue;
                    }
                    let f1 = values[at(next[0], next[1], next[2])];
                    if (f0 < 0.0) == (f1 < 0.0) {
                        continue;
                    }
                    let (u, w) = ((axis + 1) % 3, (axis + 2) % 3);
                    let cell_at = |du: usize, dw: usize| {
                        let mut c = base;
                        c[u] -= du;
                        c[w] -= dw;
                        cell_vertex[cells(c[0], c[1], c[2])]
                    };
                    let mut quad = [cell_at(1, 1), cell_at(0, 1), cell_at(0, 0), cell_at(1, 0)];
                    if quad.contains(&u32::MAX) {
                        continue;
                    }
                    // Counter-clockwise seen from +axis; the outside is on the positive side.
                    if f0 >= 0.0 {
                        quad.reverse();
                    }
                    let pq = quad.map(|q| positions[q as usize]);
                    if (pq[0] - pq[2]).length_squared() <= (pq[1] - pq[3]).length_squared() {
                        triangles.push([quad[0], quad[1], quad[2]]);
                        triangles.push([quad[0], quad[2], quad[3]]);
                    } else {
                        triangles.push([quad[0], quad[1], quad[3]]);
                        triangles.push([quad[1], quad[2], quad[3]]);
                    }
                }
            }
        }
    }

    // Project the vertices onto the surface (a few Newton steps), then take normals from the gradient.
    let mut normals = Vec::with_capacity(positions.len());
    for p in &mut positions {
        for _ in 0..4 {
            let g = gradient(parts, *p);
            if g.length_squared() < 1e-8 {
                break;
            }
            let step = (g * (field(parts, *p) / g.length_squared())).clamp_length_max(CELL * 0.5);
            *p -= step;
        }
        normals.push(gradient(parts, *p).normalize_or(Vec3::Y));
    }
    Surface {
        positions,
        normals,
        triangles,
    }
}

/// Appends a UV sphere to `surface` and returns the range of its triangles.
fn add_sphere(surface: &mut Surface, center: Vec3, radius: f32) -> std::ops::Range<usize> {
    const RINGS: u32 = 8;
    const SEGMENTS: u32 = 12;
    let first = surface.positions.len() as u32;
    for ring in 0..=RINGS {
        let theta = ring as f32 / RINGS as f32 * std::f32::consts::PI;
        for seg in 0..SEGMENTS {
            let phi = seg as f32 / SEGMENTS as f32 * TAU;
            let n = v(
                theta.sin() * phi.cos(),
                theta.cos(),
                theta.sin() * phi.sin(),
            );
            surface.positions.push(center + n * radius);
            surface.normals.push(n);
        }
    }
    let start = surface.triangles.len();
    let idx = |ring: u32, seg: u32| first + ring * SEGMENTS + seg % SEGMENTS;
    for ring in 0..RINGS {
        for seg in 0..SEGMENTS {
            let (a, b, c, d) = (
                idx(ring, seg),
                idx(ring, seg + 1),
                idx(ring + 1, seg + 1),
                idx(ring + 1, seg),
            );
            if ring > 0 {
                surface.triangles.push([a, b, c]);
            }
            if ring + 1 < RINGS {
                surface.triangles.push([a, c, d]);
            }
        }
    }
    start..surface.triangles.len()
}

// ---------------------------------------------------------------------------------------------
// Skinning weights and materials

/// Per-bone blend width (how far, in metres, weights fade into a neighbouring bone's region).
fn blend_width(name: &str) -> f32 {
    if name.contains("Thumb") || name.contains("Index") {
        0.006
    } else if name.contains("Hand") || name.contains("Toe") || name.contains("Foot") {
        0.01
    } else {
        0.016
    }
}

/// Four joints and weights per vertex, the weights as normalised bytes summing to 255.
fn skin_weights(rig: &Rig, parts: &[Part], positions: &[Vec3]) -> (Vec<[u8; 4]>, Vec<[u8; 4]>) {
    let n = rig.bones.len();
    let deforms: Vec<bool> = (0..n).map(|i| parts.iter().any(|p| p.bone == i)).collect();
    let mut joints = Vec::with_capacity(positions.len());
    let mut weights = Vec::with_capacity(positions.len());
    let mut dist = vec![f32::MAX; n];
    for &p in positions {
        dist.fill(f32::MAX);
        for part in parts {
            dist[part.bone] = dist[part.bone].min(part.sdf(p));
        }
        let best = (0..n)
            .filter(|&i| deforms[i])
            .min_by(|&a, &b| dist[a].total_cmp(&dist[b]))
            .unwrap_or(0);
        let mut candidates: Vec<(usize, f32)> = rig
            .bones
            .iter()
            .enumerate()
            .filter(|&(i, b)| {
                deforms[i]
                    && (i == best || b.parent == Some(best) || rig.bones[best].parent == Some(i))
            })
            .map(|(i, b)| {
                let width = blend_width(&b.name).min(blend_width(&rig.bones[best].name));
                (i, (-(dist[i] - dist[best]) / width).exp())
            })
            .collect();
        candidates.sort_by(|a, b| b.1.total_cmp(&a.1));
        candidates.truncate(4);
        candidates.retain(|c| c.1 > 0.004);
        let total: f32 = candidates.iter().map(|c| c.1).sum();
        let mut j = [0_u8; 4];
        let mut w = [0_u8; 4];
        for (slot, (bone, weight)) in candidates.iter().enumerate() {
            j[slot] = *bone as u8;
            w[slot] = (weight / total * 255.0).round() as u8;
        }
        // Make the bytes sum to exactly 255 by adjusting the largest weight.
        let sum: i32 = w.iter().map(|&x| i32::from(x)).sum();
        w[0] = (i32::from(w[0]) + 255 - sum) as u8;
        joints.push(j);
        weights.push(w);
    }
    (joints, weights)
}

/// The deforming bone whose shapes are nearest to `p`.
fn dominant_bone(parts: &[Part], p: Vec3) -> usize {
    let mut best = (f32::MAX, 0);
    for part in parts {
        let d = part.sdf(p);
        if d < best.0 {
            best = (d, part.bone);
        }
    }
    best.1
}

/// A cut through the surface of some bones' regions along the zero set of a scalar field: triangles
/// are split along it so material boundaries are smooth curves instead of staircases of triangles.
struct Cut {
    bones: Vec<usize>,
    field: Box<dyn Fn(Vec3) -> f32>,
    below: Material,
    above: Material,
}

fn cuts(rig: &Rig) -> Vec<Cut> {
    let b = |name: &str| rig.index(name);
    let mut cuts = Vec::new();
    // Sleeves first: the crew neck below overrides them on the shoulders.
    for side in ["Left", "Right"] {
        let arm = &rig.bones[b(&format!("{side}Arm"))];
        let (head, dir) = (arm.head, (arm.tail - arm.head).normalize());
        // Short sleeves.
        cuts.push(Cut {
            bones: ["Shoulder", "Arm", "ForeArm"]
                .map(|n| b(&format!("{side}{n}")))
                .to_vec(),
            field: Box::new(move |p: Vec3| (p - head).dot(dir) - 0.12),
            below: Material::Shirt,
            above: Material::Skin,
        });
    }
    cuts.extend([
        // Waistband.
        Cut {
            bones: vec![
                b("Hips"),
                b("Spine"),
                b("Spine1"),
                b("LeftUpLeg"),
                b("RightUpLeg"),
            ],
            field: Box::new(|p: Vec3| p.y - 1.005),
            below: Material::Trousers,
            above: Material::Shirt,
        },
        // Crew neck.
        Cut {
            bones: vec![
                b("Spine2"),
                b("Neck"),
                b("LeftShoulder"),
                b("RightShoulder"),
            ],
            field: Box::new(|p: Vec3| {
                (p.y - 1.405).min(0.082 - (p.x * p.x + (p.z + 0.012) * (p.z + 0.012)).sqrt())
            }),
            below: Material::Shirt,
            above: Material::Skin,
        },
        // Shoes.
        Cut {
            bones: [
                "LeftLeg",
                "RightLeg",
                "LeftFoot",
                "RightFoot",
                "LeftToeBase",
                "RightToeBase",
            ]
            .map(b)
            .to_vec(),
            field: Box::new(|p: Vec3| p.y - 0.11),
            below: Material::Shoes,
            above: Material::Trousers,
        },
        // Hairline: down to the nape at the back, above the ears, higher over the forehead.
        Cut {
            bones: vec![b("Head")],
            field: Box::new(|p: Vec3| {
                p.y - 1.665 - 0.9 * (p.z - 0.03).max(0.0) + 1.1 * (-p.z).max(0.0)
            }),
            below: Material::Skin,
            above: Material::Hair,
        },
    ]);
    cuts
}

/// Splits the surface's triangles along the material cuts and groups them by material.
fn paint(rig: &Rig, parts: &[Part], surface: &mut Surface) -> Vec<(Material, Vec<[u32; 3]>)> {
    let base = |bone: usize| {
        let name = rig.bones[bone].name.trim_start_matches(PREFIX);
        if name.starts_with("Spine")
            || name.ends_with("Shoulder")
            || name.ends_with("Arm") && !name.ends_with("ForeArm")
        {
            Material::Shirt
        } else if name == "Hips" || name.ends_with("Leg") {
            Material::Trousers
        } else if name.ends_with("Foot") || name.ends_with("ToeBase") {
            Material::Shoes
        } else {
            Material::Skin
        }
    };
    let mut tris: Vec<([u32; 3], usize, Material)> = surface
        .triangles
        .iter()
        .map(|t| {
            let centroid = t
                .iter()
                .map(|&i| surface.positions[i as usize])
                .sum::<Vec3>()
                / 3.0;
            let bone = dominant_bone(parts, centroid);
            (*t, bone, base(bone))
        })
        .collect();
    for cut in cuts(rig) {
        let mut split_edges = std::collections::HashMap::new();
        let mut out = Vec::with_capacity(tris.len());
        for (t, bone, material) in tris {
            if !cut.bones.contains(&bone) {
                out.push((t, bone, material));
                continue;
            }
            let s = t.map(|i| (cut.field)(surface.positions[i as usize]));
            let side = |x: f32| if x > 0.0 { cut.above } else { cut.below };
            let above = s.iter().filter(|&&x| x > 0.0).count();
            if above == 0 || above == 3 {
                out.push((t, bone, side(s[0])));
                continue;
            }
            // Rotate so the vertex alone on its side comes first (winding is kept).
            let lone = (0..3)
                .find(|&i| (s[i] > 0.0) == (above == 1))
                .expect("one vertex is alone");
            let [a, b, c] = [t[lone], t[(lone + 1) % 3], t[(lone + 2) % 3]];
            let [sa, sb, sc] = [s[lone], s[(lone + 1) % 3], s[(lone + 2) % 3]];
            let mut edge_point = |i: u32, j: u32, si: f32, sj: f32| {
                *split_edges.entry((i.min(j), i.max(j))).or_insert_with(|| {
                    let (pi, pj) = (surface.positions[i as usize], surface.positions[j as usize]);
                    let p = pi + (pj - pi) * (si / (si - sj));
                    surface.positions.push(p);
                    surface
                        .normals
                        .push(gradient(parts, p).normalize_or(Vec3::Y));
                    surface.positions.len() as u32 - 1
                })
            };
            let ab = edge_point(a, b, sa, sb);
            let ac = edge_point(a, c, sa, sc);
            out.push(([a, ab, ac], bone, side(sa)));
            out.push(([ab, b, c], bone, side(sb)));
            out.push(([ab, c, ac], bone, side(sb)));
        }
        tris = out;
    }
    surface.triangles = tris.iter().map(|t| t.0).collect();
    Material::ALL
        .iter()
        .map(|&m| (m, tris.iter().filter(|t| t.2 == m).map(|t| t.0).collect()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Idle animation

/// One sampled bone channel: local rotations (and, for the hips, translations) at each key.
struct Track {
    bone: usize,
    rotations: Vec<Quat>,
    translations: Option<Vec<Vec3>>,
}

/// Model-space rotation offsets of the idle pose at time `t`, per bone name (left side; the right
/// side is mirrored with a phase shift), plus the hips' translation offset.
fn idle_offsets(t: f32) -> (Vec<(String, Quat)>, Vec3) {
    let w = TAU / CLIP_SECONDS;
    let sway = (w * t).sin(); // weight shift, once per loop
    let breath = (2.0 * w * t).sin(); // two breaths per loop
    let deg = f32::to_radians;
    let shift = v(0.014 * sway, 0.0, 0.004 * (w * t).cos());
    let hips_roll = deg(2.0) * sway;
    let mut out = vec![
        (
            "Hips".to_owned(),
            Quat::from_rotation_z(hips_roll)
                * Quat::from_rotation_y(deg(2.5) * (w * t + 0.6).sin()),
        ),
        ("Spine".to_owned(), Quat::from_rotation_z(-hips_roll * 0.6)),
        (
            "Spine1".to_owned(),
            Quat::from_rotation_x(deg(-1.2) * breath),
        ),
        (
            "Spine2".to_owned(),
            Quat::from_rotation_x(deg(-1.8) * breath) * Quat::from_rotation_z(-hips_roll * 0.3),
        ),
        ("Neck".to_owned(), Quat::from_rotation_x(deg(1.5) * breath)),
        (
            "Head".to_owned(),
            Quat::from_rotation_y(deg(7.0) * (w * t + 1.1).sin())
                * Quat::from_rotation_x(deg(3.0) * (w * t * 2.0 + 0.4).sin()),
        ),
    ];
    let a = arm_points();
    let fore_dir = (a.wrist - a.elbow).normalize();
    let flex_axis = fore_dir.cross(Vec3::Z).normalize();
    for side in [Side::Left, Side::Right] {
        let s = side.name();
        let phase = match side {
            Side::Left => 0.0,
            Side::Right => 0.9,
        };
        let arm_sway = (w * t + phase).sin();
        let local = [
            ("Shoulder", Quat::from_rotation_z(deg(1.5) * breath)),
            (
                "Arm",
                Quat::from_rotation_z(deg(-26.0 + 2.0 * arm_sway))
                    * Quat::from_rotation_x(deg(-3.0) * arm_sway),
            ),
            (
                "ForeArm",
                Quat::from_axis_angle(flex_axis, deg(14.0 + 3.0 * arm_sway)),
            ),
            (
                "Hand",
                Quat::from_axis_angle(fore_dir, deg(-8.0 + 3.0 * arm_sway)),
            ),
            (
                "HandIndex1",
                Quat::from_axis_angle(a.across.cross(fore_dir).normalize(), deg(-12.0)),
            ),
            (
                "HandIndex2",
                Quat::from_axis_angle(a.across.cross(fore_dir).normalize(), deg(-15.0)),
            ),
        ];
        for (name, q) in local {
            out.push((format!("{s}{name}"), side.mq(q)));
        }
        // Legs: undo the hips' roll and lean against the shift so the feet stay close to planted.
        let lean = -(shift.x / 0.85).asin();
        let leg = Quat::from_rotation_z(lean - hips_roll);
        out.push((format!("{s}UpLeg"), leg));
        out.push((format!("{s}Foot"), leg.inverse()));
    }
    (out, shift)
}

/// Samples a looping clip of `seconds` at `keys_per_second` from `offsets(t)` (model-space rotation
/// offsets per bone name and the hips' translation offset, as [`idle_offsets`] returns them).
fn sample_tracks(
    rig: &Rig,
    seconds: f32,
    keys_per_second: f32,
    offsets: impl Fn(f32) -> (Vec<(String, Quat)>, Vec3),
) -> (Vec<f32>, Vec<Track>) {
    let keys = (seconds * keys_per_second).round() as usize;
    let times: Vec<f32> = (0..=keys).map(|k| k as f32 / keys_per_second).collect();
    let mut tracks: Vec<Track> = Vec::new();
    for &t in &times {
        let (offsets, shift) = offsets(t);
        for (name, offset) in offsets {
            let bone = rig.index(&name);
            // The offset is a rotation in model axes about the bone's joint, with the parent at rest:
            // conjugate it into the bone's own frame and append it to the rest local rotation.
            let rest_global = rig.bones[bone].rotation;
            let delta = rest_global.inverse() * offset * rest_global;
            let (rest_t, rest_r) = rig.local(bone);
            let mut q = (rest_r * delta).normalize();
            let track = match tracks.iter_mut().position(|tr| tr.bone == bone) {
                Some(i) => &mut tracks[i],
                None => {
                    tracks.push(Track {
                        bone,
                        rotations: Vec::new(),
                        translations: rig.bones[bone].parent.is_none().then(Vec::new),
                    });
                    tracks.last_mut().expect("just pushed")
                }
            };
            if let Some(prev) = track.rotations.last()
                && prev.dot(q) < 0.0
            {
                q = -q;
            }
            track.rotations.push(q);
            if let Some(tr) = &mut track.translations {
                tr.push(rest_t + shift);
            }
        }
    }
    (times, tracks)
}

fn idle_tracks(rig: &Rig) -> (Vec<f32>, Vec<Track>) {
    sample_tracks(rig, CLIP_SECONDS, KEYS_PER_SECOND, idle_offsets)
}

// ---------------------------------------------------------------------------------------------
// Walk animation

/// Length of one walk cycle (two steps), in seconds.
const WALK_SECONDS: f32 = 1.2;
/// Keyframes per second of the walk clip.
const WALK_KEYS_PER_SECOND: f32 = 40.0;
/// The speed the walk is authored for, in metres per second: a planted foot moves backwards
/// under the hips at this speed (the clip walks in place; the game moves the character).
const WALK_SPEED: f32 = 0.9;
/// Share of the cycle a foot is on the ground (toe-off falls on a key: 30 of the 48).
const WALK_STANCE: f32 = 0.625;

/// The character's own directions, measured on its rest pose: up from the hips to the top of the
/// head, forward along the feet (ankle to toe tip, levelled), left = up × forward.
#[derive(Clone, Copy)]
struct BodyAxes {
    up: Vec3,
    fwd: Vec3,
    left: Vec3,
}

impl BodyAxes {
    fn measure(rig: &Rig) -> Self {
        let head = |name: &str| rig.bones[rig.index(name)].head;
        let up = (head("HeadTop_End") - head("Hips")).normalize();
        let feet =
            (head("LeftToe_End") - head("LeftFoot")) + (head("RightToe_End") - head("RightFoot"));
        let fwd = feet.reject_from(up).normalize();
        Self {
            up,
            fwd,
            left: up.cross(fwd),
        }
    }

    /// A point in the sagittal plane: (forward, up).
    fn flat(self, p: Vec3) -> Vec2 {
        Vec2::new(p.dot(self.fwd), p.dot(self.up))
    }

    /// A rotation about the left axis that turns forward toward up (and a limb hanging down
    /// forward) by `a`: the plane's counter-clockwise rotation.
    fn pitch(self, a: f32) -> Quat {
        Quat::from_axis_angle(self.left, -a)
    }

    /// A turn about up, forward toward left.
    fn yaw(self, a: f32) -> Quat {
        Quat::from_axis_angle(self.up, a)
    }
}

/// One leg, measured on the rest pose and the skinned shoe, in the sagittal plane.
#[derive(Clone, Copy)]
struct LegGeometry {
    side: Side,
    hip: Vec2,
    /// Hip to knee, knee to ankle.
    thigh: Vec2,
    shin: Vec2,
    ankle: Vec2,
    /// Where the heel and the ball of the foot touch the ground (the shoe's sole).
    heel: Vec2,
    ball: Vec2,
}

impl LegGeometry {
    /// From the joints and the vertices the foot bones own: the sole is the lowest of them, the
    /// heel the rearmost near the sole, the ball under the toe joint.
    fn measure(rig: &Rig, parts: &[Part], positions: &[Vec3], axes: BodyAxes, side: Side) -> Self {
        let s = side.name();
        let joint = |n: &str| axes.flat(rig.bones[rig.index(&format!("{s}{n}"))].head);
        let (foot, toe) = (
            rig.index(&format!("{s}Foot")),
            rig.index(&format!("{s}ToeBase")),
        );
        let shoe: Vec<Vec2> = positions
            .iter()
            .filter(|&&p| [foot, toe].contains(&dominant_bone(parts, p)))
            .map(|&p| axes.flat(p))
            .collect();
        let sole = shoe.iter().map(|p| p.y).fold(f32::MAX, f32::min);
        let heel = shoe
            .iter()
            .filter(|p| p.y < sole + 0.015)
            .map(|p| p.x)
            .fold(f32::MAX, f32::min);
        let (hip, knee, ankle) = (joint("UpLeg"), joint("Leg"), joint("Foot"));
        Self {
            side,
            hip,
            thigh: knee - hip,
            shin: ankle - knee,
            ankle,
            heel: Vec2::new(heel, sole),
            ball: Vec2::new(joint("ToeBase").x, sole),
        }
    }

    /// Hip flexion `h` (thigh forward) and knee flexion `k` (shin back, from rest) that put the
    /// ankle at `ankle` with the hip at `hip`; the leg straightens where it cannot reach.
    fn solve(&self, hip: Vec2, ankle: Vec2) -> (f32, f32) {
        let angle = |v: Vec2| v.y.atan2(v.x);
        let wrap = |a: f32| (a + std::f32::consts::PI).rem_euclid(TAU) - std::f32::consts::PI;
        let (a, b, d) = (self.thigh, self.shin, ankle - hip);
        let straight = wrap(angle(b) - angle(a));
        let cos = (d.length_squared() - a.length_squared() - b.length_squared())
            / (2.0 * a.length() * b.length());
        let k = straight + cos.clamp(-1.0, 1.0).acos();
        let reach = a + Vec2::from_angle(-k).rotate(b);
        (wrap(angle(d) - angle(reach)), k)
    }
}

/// The gait of one foot at cycle phase `p` (0 = heel strike): the ankle relative to where the
/// hips are at rest (the clip walks in place, so a planted foot moves back at [`WALK_SPEED`]),
/// the foot's pitch (toes up positive) and, while planted, the point it stands on: where it is
/// now and where that point of the foot is at rest.
fn foot_gait(leg: &LegGeometry, p: f32) -> (Vec2, f32, Option<(Vec2, Vec2)>) {
    let stance_time = WALK_STANCE * WALK_SECONDS;
    let heel_strike = 14f32.to_radians();
    let toe_off = -28f32.to_radians();
    let smooth = |x: f32| {
        let x = x.clamp(0.0, 1.0);
        x * x * (3.0 - 2.0 * x)
    };
    // Heel on the ground at its rest place half-way through the stance.
    let strike_at = leg.heel.x + WALK_SPEED * stance_time * 0.5;
    let stance = |u: f32| {
        let ground = strike_at - WALK_SPEED * stance_time * u;
        let (pitch, pivot_rest, pivot) = if u < 0.15 {
            let pitch = heel_strike * (1.0 - smooth(u / 0.15));
            (pitch, leg.heel, Vec2::new(ground, leg.heel.y))
        } else if u < 0.6 {
            (0.0, leg.heel, Vec2::new(ground, leg.heel.y))
        } else {
            let pitch = toe_off * smooth((u - 0.6) / 0.4);
            let ball = ground + leg.ball.x - leg.heel.x;
            (pitch, leg.ball, Vec2::new(ball, leg.ball.y))
        };
        let ankle = pivot + Vec2::from_angle(pitch).rotate(leg.ankle - pivot_rest);
        (ankle, pitch, (pivot, pivot_rest))
    };
    if p < WALK_STANCE {
        let (ankle, pitch, contact) = stance(p / WALK_STANCE);
        return (ankle, pitch, Some(contact));
    }
    // Swing: from toe-off to the next heel strike, leaving and meeting the ground at its speed.
    let s = (p - WALK_STANCE) / (1.0 - WALK_STANCE);
    let (from, from_pitch, _) = stance(1.0);
    let (to, to_pitch, _) = stance(0.0);
    let tangent = -WALK_SPEED * (1.0 - WALK_STANCE) * WALK_SECONDS;
    let (s2, s3) = (s * s, s * s * s);
    let x = (2.0 * s3 - 3.0 * s2 + 1.0) * from.x
        + (s3 - 2.0 * s2 + s) * tangent
        + (-2.0 * s3 + 3.0 * s2) * to.x
        + (s3 - s2) * tangent;
    let lift = 0.085 * (std::f32::consts::PI * s).sin();
    let y = from.y + (to.y - from.y) * smooth(s) + lift;
    let pitch = from_pitch + (to_pitch - from_pitch) * smooth(s);
    (Vec2::new(x, y), pitch, None)
}

/// Everything the walk clip is made from.
struct Walk {
    axes: BodyAxes,
    legs: [LegGeometry; 2],
    /// Hips height: `bob_base - bob * cos(4π (t / T - 0.05))`, low after each heel strike.
    bob_base: f32,
    bob: f32,
}

impl Walk {
    fn new(rig: &Rig, parts: &[Part], positions: &[Vec3]) -> Self {
        let axes = BodyAxes::measure(rig);
        let legs = [Side::Left, Side::Right]
            .map(|side| LegGeometry::measure(rig, parts, positions, axes, side));
        let bob = 0.018;
        let wave = |t: f32| (2.0 * TAU * (t / WALK_SECONDS - 0.05)).cos();
        // The highest hips both legs reach with the knee a little bent, at every moment.
        let mut base = 0.0_f32;
        for i in 0..480 {
            let t = i as f32 / 480.0 * WALK_SECONDS;
            for leg in &legs {
                let (ankle, ..) = foot_gait(leg, Walk::phase(leg.side, t));
                let reach = 0.985 * (leg.thigh.length() + leg.shin.length());
                let d = ankle - leg.hip;
                let highest = d.y + (reach * reach - d.x * d.x).max(0.0).sqrt();
                base = base.min(highest + bob * wave(t));
            }
        }
        Self {
            axes,
            legs,
            bob_base: base,
            bob,
        }
    }

    fn phase(side: Side, t: f32) -> f32 {
        let p = t / WALK_SECONDS + if matches!(side, Side::Left) { 0.0 } else { 0.5 };
        p.rem_euclid(1.0)
    }

    fn hips_drop(&self, t: f32) -> f32 {
        self.bob_base - self.bob * (2.0 * TAU * (t / WALK_SECONDS - 0.05)).cos()
    }

    /// Model-space rotation offsets at `t` (like [`idle_offsets`]) and the hips' translation.
    fn offsets(&self, t: f32) -> (Vec<(String, Quat)>, Vec3) {
        let ax = self.axes;
        let deg = f32::to_radians;
        let drop = self.hips_drop(t);
        let cycle = TAU * t / WALK_SECONDS;
        // The chest turns with the arms (left arm forward half a cycle after the left heel strike).
        let chest = deg(5.0) * cycle.cos();
        let mut out = vec![
            // The hips only move (the clip's translation channel is on them).
            ("Hips".to_owned(), Quat::IDENTITY),
            (
                "Spine".to_owned(),
                ax.pitch(deg(-2.0)) * ax.yaw(chest * 0.4),
            ),
            (
                "Spine1".to_owned(),
                ax.pitch(deg(-1.5)) * ax.yaw(chest * 0.4),
            ),
            ("Spine2".to_owned(), ax.yaw(chest * 0.2)),
            ("Neck".to_owned(), ax.pitch(deg(2.0)) * ax.yaw(-chest * 0.5)),
            ("Head".to_owned(), ax.pitch(deg(1.5)) * ax.yaw(-chest * 0.5)),
        ];
        for leg in &self.legs {
            let s = leg.side.name();
            let (ankle, foot_pitch, _) = foot_gait(leg, Walk::phase(leg.side, t));
            let (h, k) = leg.solve(leg.hip + Vec2::new(0.0, drop), ankle);
            out.push((format!("{s}UpLeg"), ax.pitch(h)));
            out.push((format!("{s}Leg"), ax.pitch(-k)));
            out.push((format!("{s}Foot"), ax.pitch(foot_pitch - h + k)));
            // Toes stay flat on the ground while the heel rises.
            out.push((format!("{s}ToeBase"), ax.pitch((-foot_pitch).max(0.0))));
        }
        let a = arm_points();
        for side in [Side::Left, Side::Right] {
            let s = side.name();
            let sign = if matches!(side, Side::Left) {
                1.0
            } else {
                -1.0
            };
            // Each arm swings with the opposite leg.
            let swing = -sign * cycle.cos();
            let fore = side.m(a.wrist - a.elbow).normalize();
            let lower = Quat::from_axis_angle(ax.fwd, -sign * deg(24.0));
            let flex = fore.cross(ax.fwd).normalize();
            out.push((format!("{s}Arm"), ax.pitch(deg(17.0) * swing) * lower));
            out.push((
                format!("{s}ForeArm"),
                Quat::from_axis_angle(flex, deg(20.0 + 12.0 * swing.max(0.0))),
            ));
            out.push((
                format!("{s}Hand"),
                side.mq(Quat::from_axis_angle(
                    (a.wrist - a.elbow).normalize(),
                    deg(-8.0),
                )),
            ));
            let curl = a.across.cross((a.wrist - a.elbow).normalize()).normalize();
            out.push((
                format!("{s}HandIndex1"),
                side.mq(Quat::from_axis_angle(curl, deg(-14.0))),
            ));
            out.push((
                format!("{s}HandIndex2"),
                side.mq(Quat::from_axis_angle(curl, deg(-18.0))),
            ));
        }
        (out, ax.up * drop)
    }

    fn tracks(&self, rig: &Rig) -> (Vec<f32>, Vec<Track>) {
        sample_tracks(rig, WALK_SECONDS, WALK_KEYS_PER_SECOND, |t| self.offsets(t))
    }

    /// Measures the clip as written (forward kinematics on its keys and on in-between times,
    /// interpolated the way a player does): the planted heel or ball of each foot against the
    /// ground it should stand on, moving back at [`WALK_SPEED`]. Returns the worst height and
    /// along-the-ground errors, in metres.
    fn measure(&self, rig: &Rig, times: &[f32], tracks: &[Track]) -> (f32, f32) {
        let pose_at = |t: f32| -> Vec<Mat4> {
            let k = times.partition_point(|&x| x <= t).clamp(1, times.len() - 1);
            let f = ((t - times[k - 1]) / (times[k] - times[k - 1])).clamp(0.0, 1.0);
            let mut globals: Vec<Mat4> = Vec::with_capacity(rig.bones.len());
            for (i, bone) in rig.bones.iter().enumerate() {
                let (mut tr, mut r) = rig.local(i);
                if let Some(track) = tracks.iter().find(|tr| tr.bone == i) {
                    r = track.rotations[k - 1].slerp(track.rotations[k], f);
                    if let Some(ts) = &track.translations {
                        tr = ts[k - 1].lerp(ts[k], f);
                    }
                }
                let local = Mat4::from_rotation_translation(r, tr);
                globals.push(bone.parent.map_or(local, |p| globals[p] * local));
            }
            globals
        };
        let (mut height, mut along) = (0.0_f32, 0.0_f32);
        for i in 0..=240 {
            let t = i as f32 / 240.0 * WALK_SECONDS;
            let globals = pose_at(t);
            for leg in &self.legs {
                let (_, _, Some((now, rest))) = foot_gait(leg, Walk::phase(leg.side, t)) else {
                    continue;
                };
                let foot = rig.index(&format!("{}Foot", leg.side.name()));
                let lateral = rig.bones[foot].head.dot(self.axes.left);
                let at_rest =
                    self.axes.fwd * rest.x + self.axes.up * rest.y + self.axes.left * lateral;
                let posed = (globals[foot] * rig.bind(foot).inverse()).transform_point3(at_rest);
                let flat = self.axes.flat(posed);
                height = height.max((flat.y - now.y).abs());
                let side = posed.dot(self.axes.left) - lateral;
                along = along.max(Vec2::new(flat.x - now.x, side).length());
            }
        }
        (height, along)
    }
}

// ---------------------------------------------------------------------------------------------
// glTF output

struct Builder {
    root: json::Root,
    bin: Vec<u8>,
}

impl Builder {
    fn view(
        &mut self,
        bytes: &[u8],
        target: Option<json::buffer::Target>,
    ) -> json::Index<json::buffer::View> {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        let offset = self.bin.len();
        self.bin.extend_from_slice(bytes);
        self.root.push(json::buffer::View {
            buffer: json::Index::new(0),
            byte_length: USize64(bytes.len() as u64),
            byte_offset: Some(USize64(offset as u64)),
            byte_stride: None,
            name: None,
            target: target.map(Valid),
            extensions: None,
            extras: Default::default(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn accessor(
        &mut self,
        bytes: &[u8],
        target: Option<json::buffer::Target>,
        count: usize,
        component: json::accessor::ComponentType,
        type_: json::accessor::Type,
        normalized: bool,
        bounds: Option<(Vec<f32>, Vec<f32>)>,
    ) -> json::Index<json::Accessor> {
        let view = self.view(bytes, target);
        let (min, max) = match bounds {
            Some((lo, hi)) => (Some(json::Value::from(lo)), Some(json::Value::from(hi))),
            None => (None, None),
        };
        self.root.push(json::Accessor {
            buffer_view: Some(view),
            byte_offset: None,
            count: USize64(count as u64),
            component_type: Valid(json::accessor::GenericComponentType(component)),
            extensions: None,
            extras: Default::default(),
            type_: Valid(type_),
            min,
            max,
            name: None,
            normalized,
            sparse: None,
        })
    }

    fn floats(
        &mut self,
        data: &[f32],
        type_: json::accessor::Type,
        count: usize,
        bounds: bool,
    ) -> json::Index<json::Accessor> {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        let bounds = bounds.then(|| {
            let width = data.len() / count;
            let mut lo = vec![f32::MAX; width];
            let mut hi = vec![f32::MIN; width];
            for chunk in data.chunks(width) {
                for (c, &x) in chunk.iter().enumerate() {
                    lo[c] = lo[c].min(x);
                    hi[c] = hi[c].max(x);
                }
            }
            (lo, hi)
        });
        let target = matches!(type_, json::accessor::Type::Vec3)
            .then_some(json::buffer::Target::ArrayBuffer);
        self.accessor(
            &bytes,
            target,
            count,
            json::accessor::ComponentType::F32,
            type_,
            false,
            bounds,
        )
    }
}

fn vec3s(data: &[Vec3]) -> Vec<f32> {
    data.iter().flat_map(Vec3::to_array).collect()
}

fn write_glb(
    rig: &Rig,
    surface: &Surface,
    joints: &[[u8; 4]],
    weights: &[[u8; 4]],
    groups: &[(Material, Vec<[u32; 3]>)],
    clips: &[(&str, Vec<f32>, Vec<Track>)],
) -> Vec<u8> {
    use json::accessor::{ComponentType, Type};
    let mut b = Builder {
        root: json::Root {
            asset: json::Asset {
                generator: Some("bevy_ik examples/make_character.rs".to_owned()),
                copyright: Some("CC0-1.0 (original work of the bevy_ik authors)".to_owned()),
                ..Default::default()
            },
            ..Default::default()
        },
        bin: Vec::new(),
    };

    // Nodes: 0 = Armature, 1.. = bones in rig order, last = the mesh.
    let bone_node = |i: usize| json::Index::<json::Node>::new(i as u32 + 1);
    let armature = b.root.push(json::Node {
        name: Some("Armature".to_owned()),
        ..Default::default()
    });
    for (i, bone) in rig.bones.iter().enumerate() {
        let (t, r) = rig.local(i);
        let children: Vec<_> = rig.children(i).map(bone_node).collect();
        b.root.push(json::Node {
            name: Some(bone.name.clone()),
            translation: Some(t.to_array()),
            rotation: Some(json::scene::UnitQuaternion(r.to_array())),
            children: (!children.is_empty()).then_some(children),
            ..Default::default()
        });
    }

    let n = surface.positions.len();
    let positions = b.floats(&vec3s(&surface.positions), Type::Vec3, n, true);
    let normals = b.floats(&vec3s(&surface.normals), Type::Vec3, n, false);
    let joint_bytes: Vec<u8> = joints.iter().flatten().copied().collect();
    let joints_acc = b.accessor(
        &joint_bytes,
        Some(json::buffer::Target::ArrayBuffer),
        n,
        ComponentType::U8,
        Type::Vec4,
        false,
        None,
    );
    let weight_bytes: Vec<u8> = weights.iter().flatten().copied().collect();
    let weights_acc = b.accessor(
        &weight_bytes,
        Some(json::buffer::Target::ArrayBuffer),
        n,
        ComponentType::U8,
        Type::Vec4,
        true,
        None,
    );

    let materials: Vec<_> = Material::ALL
        .iter()
        .map(|&m| {
            let (color, roughness) = m.look();
            b.root.push(json::Material {
                name: Some(format!("{m:?}")),
                pbr_metallic_roughness: json::material::PbrMetallicRoughness {
                    base_color_factor: json::material::PbrBaseColorFactor(color),
                    metallic_factor: json::material::StrengthFactor(0.0),
                    roughness_factor: json::material::StrengthFactor(roughness),
                    ..Default::default()
                },
                ..Default::default()
            })
        })
        .collect();

    let mut primitives = Vec::new();
    for (material, tris) in groups {
        if tris.is_empty() {
            continue;
        }
        let index_bytes: Vec<u8> = tris
            .iter()
            .flatten()
            .flat_map(|&i| (i as u16).to_le_bytes())
            .collect();
        let indices = b.accessor(
            &index_bytes,
            Some(json::buffer::Target::ElementArrayBuffer),
            tris.len() * 3,
            ComponentType::U16,
            Type::Scalar,
            false,
            None,
        );
        let mut attributes = std::collections::BTreeMap::new();
        attributes.insert(Valid(json::mesh::Semantic::Positions), positions);
        attributes.insert(Valid(json::mesh::Semantic::Normals), normals);
        attributes.insert(Valid(json::mesh::Semantic::Joints(0)), joints_acc);
        attributes.insert(Valid(json::mesh::Semantic::Weights(0)), weights_acc);
        let m = Material::ALL
            .iter()
            .position(|x| x == material)
            .expect("every material is listed");
        primitives.push(json::mesh::Primitive {
            attributes,
            extensions: None,
            extras: Default::default(),
            indices: Some(indices),
            material: Some(materials[m]),
            mode: Valid(json::mesh::Mode::Triangles),
            targets: None,
        });
    }
    let mesh = b.root.push(json::Mesh {
        extensions: None,
        extras: Default::default(),
        name: Some("Body".to_owned()),
        primitives,
        weights: None,
    });

    let ibm: Vec<f32> = (0..rig.bones.len())
        .flat_map(|i| rig.bind(i).inverse().to_cols_array())
        .collect();
    let ibm = b.floats(&ibm, Type::Mat4, rig.bones.len(), false);
    let skin = b.root.push(json::Skin {
        extensions: None,
        extras: Default::default(),
        inverse_bind_matrices: Some(ibm),
        joints: (0..rig.bones.len()).map(bone_node).collect(),
        name: Some("Armature".to_owned()),
        skeleton: Some(bone_node(0)),
    });
    let body = b.root.push(json::Node {
        name: Some("Body".to_owned()),
        mesh: Some(mesh),
        skin: Some(skin),
        ..Default::default()
    });
    b.root.nodes[armature.value()].children = Some(vec![bone_node(0), body]);

    // The clips.
    for (name, times, tracks) in clips {
        let input = b.floats(times, Type::Scalar, times.len(), true);
        let mut channels = Vec::new();
        let mut samplers = Vec::new();
        for track in tracks {
            let rot: Vec<f32> = track.rotations.iter().flat_map(|q| q.to_array()).collect();
            let output = b.floats(&rot, Type::Vec4, track.rotations.len(), false);
            let mut outputs = vec![(json::animation::Property::Rotation, output)];
            if let Some(tr) = &track.translations {
                let output = b.floats(&vec3s(tr), Type::Vec3, tr.len(), false);
                outputs.push((json::animation::Property::Translation, output));
            }
            for (path, output) in outputs {
                samplers.push(json::animation::Sampler {
                    extensions: None,
                    extras: Default::default(),
                    input,
                    interpolation: Valid(json::animation::Interpolation::Linear),
                    output,
                });
                channels.push(json::animation::Channel {
                    sampler: json::Index::new(samplers.len() as u32 - 1),
                    target: json::animation::Target {
                        extensions: None,
                        extras: Default::default(),
                        node: bone_node(track.bone),
                        path: Valid(path),
                    },
                    extensions: None,
                    extras: Default::default(),
                });
            }
        }
        b.root.push(json::Animation {
            extensions: None,
            extras: Default::default(),
            channels,
            name: Some((*name).to_owned()),
            samplers,
        });
    }

    let scene = b.root.push(json::Scene {
        extensions: None,
        extras: Default::default(),
        name: Some("Scene".to_owned()),
        nodes: vec![armature],
    });
    b.root.scene = Some(scene);
    while !b.bin.len().is_multiple_of(4) {
        b.bin.push(0);
    }
    b.root.push(json::Buffer {
        byte_length: USize64(b.bin.len() as u64),
        name: None,
        uri: None,
        extensions: None,
        extras: Default::default(),
    });

    let mut text = b.root.to_vec().expect("the glTF document serialises");
    while !text.len().is_multiple_of(4) {
        text.push(b' ');
    }
    let total = 12 + 8 + text.len() + 8 + b.bin.len();
    let mut glb = Vec::with_capacity(total);
    glb.extend_from_slice(b"glTF");
    glb.extend_from_slice(&2_u32.to_le_bytes());
    glb.extend_from_slice(&(total as u32).to_le_bytes());
    glb.extend_from_slice(&(text.len() as u32).to_le_bytes());
    glb.extend_from_slice(b"JSON");
    glb.extend_from_slice(&text);
    glb.extend_from_slice(&(b.bin.len() as u32).to_le_bytes());
    glb.extend_from_slice(b"BIN\0");
    glb.extend_from_slice(&b.bin);
    glb
}

// ---------------------------------------------------------------------------------------------
// Self-checks

fn check(
    rig: &Rig,
    surface: &Surface,
    parts: &[Part],
    joints: &[[u8; 4]],
    weights: &[[u8; 4]],
    body: (usize, usize),
) -> Result<(), String> {
    let (body_vertices, body_triangles) = body;
    // Node transforms (as written) reproduce the bind pose, and each bone's +Y points at its tail.
    let mut globals: Vec<Mat4> = Vec::with_capacity(rig.bones.len());
    for (i, bone) in rig.bones.iter().enumerate() {
        let (t, r) = rig.local(i);
        let local = Mat4::from_rotation_translation(r, t);
        let global = bone.parent.map_or(local, |p| globals[p] * local);
        let (_, rot, pos) = global.to_scale_rotation_translation();
        if pos.distance(bone.head) > 1e-5 {
            return Err(format!("{}: head {pos} != {}", bone.name, bone.head));
        }
        let y = rot * Vec3::Y;
        if y.dot((bone.tail - bone.head).normalize()) < 0.9999 {
            return Err(format!(
                "{}: +Y {y} does not point along the bone",
                bone.name
            ));
        }
        if !(rig.bind(i).inverse() * global).abs_diff_eq(Mat4::IDENTITY, 1e-5) {
            return Err(format!(
                "{}: inverse bind matrix does not invert the bind pose",
                bone.name
            ));
        }
        globals.push(global);
    }
    let non_identity = (1..rig.bones.len())
        .filter(|&i| rig.local(i).1.angle_between(Quat::IDENTITY) > 0.05)
        .count();
    if non_identity < rig.bones.len() / 2 {
        return Err(format!(
            "only {non_identity} bones have non-identity rest rotations"
        ));
    }
    // Weights: bytes sum to 255, joints in range, no weight on leaf (end) bones.
    for (j, w) in joints.iter().zip(weights) {
        let sum: u32 = w.iter().map(|&x| u32::from(x)).sum();
        if sum != 255 {
            return Err(format!("weights {w:?} sum to {sum}/255"));
        }
        for (&joint, &weight) in j.iter().zip(w) {
            if weight > 0 && !parts.iter().any(|p| p.bone == usize::from(joint)) {
                return Err(format!(
                    "weight on non-deforming bone {}",
                    rig.bones[usize::from(joint)].name
                ));
            }
        }
    }
    // Geometry: finite, on the surface, triangles facing outwards.
    for p in &surface.positions[..] {
        if !p.is_finite() {
            return Err("non-finite vertex".to_owned());
        }
    }
    let mut inward = 0;
    for t in &surface.triangles[..body_triangles] {
        let [a, b, c] = t.map(|i| surface.positions[i as usize]);
        let face = (b - a).cross(c - a);
        let centroid = (a + b + c) / 3.0;
        if face.dot(gradient(parts, centroid)) < 0.0 {
            inward += 1;
        }
    }
    if inward * 200 > body_triangles {
        return Err(format!(
            "{inward} of {body_triangles} triangles face inwards"
        ));
    }
    let off = surface.positions[..body_vertices]
        .iter()
        .filter(|&&p| field(parts, p).abs() > CELL * 0.1)
        .count();
    eprintln!(
        "self-check: {} bones, {} vertices, {body_triangles} body triangles, {inward} facing inwards, {off} vertices off the surface",
        rig.bones.len(),
        surface.positions.len()
    );
    Ok(())
}

fn main() -> ExitCode {
    let out = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("assets/character.glb"), PathBuf::from);
    let rig = build_rig();
    let parts = build_parts(&rig);
    let mut surface = polygonise(&parts);
    let mut groups = paint(&rig, &parts, &mut surface);
    let body_vertices = surface.positions.len();
    let body_triangles = surface.triangles.len();
    let (mut joints, mut weights) = skin_weights(&rig, &parts, &surface.positions);

    // Eyes: small spheres half sunk into the face, rigidly bound to the head.
    let head = rig.index("Head");
    for x in [0.031_f32, -0.031] {
        let mut p = v(x, 1.668, 0.0);
        while field(&parts, p) < 0.0 {
            p.z += 0.001;
        }
        let range = add_sphere(&mut surface, p - v(0.0, 0.0, 0.006), 0.0125);
        let eyes = &mut groups
            .iter_mut()
            .find(|g| g.0 == Material::Eyes)
            .expect("eyes group")
            .1;
        eyes.extend_from_slice(&surface.triangles[range]);
    }
    for _ in body_vertices..surface.positions.len() {
        joints.push([head as u8, 0, 0, 0]);
        weights.push([255, 0, 0, 0]);
    }

    if surface.positions.len() > usize::from(u16::MAX) {
        eprintln!(
            "too many vertices for 16-bit indices: {}",
            surface.positions.len()
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = check(
        &rig,
        &surface,
        &parts,
        &joints,
        &weights,
        (body_vertices, body_triangles),
    ) {
        eprintln!("self-check failed: {e}");
        return ExitCode::FAILURE;
    }
    let (times, tracks) = idle_tracks(&rig);
    let walk = Walk::new(&rig, &parts, &surface.positions[..body_vertices]);
    let (walk_times, walk_tracks) = walk.tracks(&rig);
    // The walk as written: planted heels and balls on the ground, moving back at the walk speed.
    let (height, along) = walk.measure(&rig, &walk_times, &walk_tracks);
    eprintln!(
        "walk: {WALK_SECONDS} s cycle at {WALK_SPEED} m/s, hips {:.1} cm lower, planted foot off the ground ≤ {:.2} mm, off its track ≤ {:.2} mm",
        -walk.bob_base * 100.0,
        height * 1000.0,
        along * 1000.0
    );
    if height > 0.002 || along > 0.002 {
        eprintln!(
            "self-check failed: the walk's planted feet leave their ground by more than 2 mm"
        );
        return ExitCode::FAILURE;
    }
    let clips = [("Idle", times, tracks), ("Walk", walk_times, walk_tracks)];
    let glb = write_glb(&rig, &surface, &joints, &weights, &groups, &clips);
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = fs::create_dir_all(dir)
    {
        eprintln!("cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    match fs::write(&out, &glb) {
        Ok(()) => {
            let counts: Vec<String> = groups
                .iter()
                .map(|g| format!("{:?} {}", g.0, g.1.len()))
                .collect();
            eprintln!(
                "wrote {} ({} KiB): triangles per material: {}",
                out.display(),
                glb.len() / 1024,
                counts.join(", ")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot write {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
