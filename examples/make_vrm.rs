//! Makes VRM test avatars from the demo character, `assets/character.glb`: the same file with
//! a VRM humanoid table added and every node renamed so that no naming convention can map it
//! (`joint_07`): only the table says which bone is which.
//!
//! ```text
//! cargo run --example make_vrm -- 1 assets/character_vrm1.vrm
//! cargo run --example make_vrm -- 0 assets/character_vrm0.vrm
//! ```
//!
//! * VRM 1.0 (`1`): the `VRMC_vrm` extension, `humanoid.humanBones` a map of role to
//!   `{node}`; the avatar faces +Z, as the spec has it.
//! * VRM 0.x (`0`): the `VRM` extension, `humanoid.humanBones` a list of `{bone, node}`; the
//!   avatar faces −Z, as VRM 0.x avatars do (the scene is turned half a turn about +Y under a
//!   new root node).
//!
//! * Spring bones: a hair root at the back of the head with two strands (nodes added at the
//!   end, so the character's node indices are kept), as `VRMC_springBone` 1.0 (a spring per
//!   strand, head sphere, chest capsule, an extended-collider plane) or VRM 0.x
//!   `secondaryAnimation` (one bone group that branches, sphere colliders).
//!
//! Mesh, skin, materials and the animations (`Idle`, `Walk`) are unchanged (node indices are kept). The
//! avatar is the bundled character, original work released under CC0 1.0 (see
//! `assets/LICENSE.md`); the VRM meta says so. The GLB container is read and written with the
//! `gltf` crate, the JSON edited as a `serde_json` value.
//!
//! The tests of `bevy_ik`'s `vrm` feature build the same files in memory with
//! [`vrm_from_glb`] (this file is included there).

#![allow(
    dead_code,
    reason = "shared with the bevy_ik tests, which use only the converter"
)]

use std::borrow::Cow;

use serde_json::{Value, json};

/// The character's Mixamo bone names (without the `mixamorig:` prefix) and their VRM roles:
/// `(name, VRM 0.x role, VRM 1.0 role)` (the thumbs differ between the versions).
pub const TABLE: [(&str, &str, &str); 30] = [
    ("Hips", "hips", "hips"),
    ("Spine", "spine", "spine"),
    ("Spine1", "chest", "chest"),
    ("Spine2", "upperChest", "upperChest"),
    ("Neck", "neck", "neck"),
    ("Head", "head", "head"),
    ("LeftShoulder", "leftShoulder", "leftShoulder"),
    ("LeftArm", "leftUpperArm", "leftUpperArm"),
    ("LeftForeArm", "leftLowerArm", "leftLowerArm"),
    ("LeftHand", "leftHand", "leftHand"),
    ("LeftHandIndex1", "leftIndexProximal", "leftIndexProximal"),
    ("LeftHandThumb1", "leftThumbProximal", "leftThumbMetacarpal"),
    ("RightShoulder", "rightShoulder", "rightShoulder"),
    ("RightArm", "rightUpperArm", "rightUpperArm"),
    ("RightForeArm", "rightLowerArm", "rightLowerArm"),
    ("RightHand", "rightHand", "rightHand"),
    (
        "RightHandIndex1",
        "rightIndexProximal",
        "rightIndexProximal",
    ),
    (
        "RightHandThumb1",
        "rightThumbProximal",
        "rightThumbMetacarpal",
    ),
    ("LeftUpLeg", "leftUpperLeg", "leftUpperLeg"),
    ("LeftLeg", "leftLowerLeg", "leftLowerLeg"),
    ("LeftFoot", "leftFoot", "leftFoot"),
    ("LeftToeBase", "leftToes", "leftToes"),
    ("RightUpLeg", "rightUpperLeg", "rightUpperLeg"),
    ("RightLeg", "rightLowerLeg", "rightLowerLeg"),
    ("RightFoot", "rightFoot", "rightFoot"),
    ("RightToeBase", "rightToes", "rightToes"),
    (
        "LeftHandIndex2",
        "leftIndexIntermediate",
        "leftIndexIntermediate",
    ),
    (
        "RightHandIndex2",
        "rightIndexIntermediate",
        "rightIndexIntermediate",
    ),
    (
        "LeftHandThumb2",
        "leftThumbIntermediate",
        "leftThumbProximal",
    ),
    (
        "RightHandThumb2",
        "rightThumbIntermediate",
        "rightThumbProximal",
    ),
];

/// The name every node gets: no naming convention maps it.
#[must_use]
pub fn anonymous_name(node: usize) -> String {
    format!("joint_{node:02}")
}

/// `glb` (the bundled character) as a VRM `version` (0 or 1) avatar; see the module docs.
/// With `table == false` the same renamed file without the VRM extension (no way to map it).
///
/// # Errors
/// A message when `glb` is not a GLB with the character's bones, or `version` is not 0 or 1.
pub fn vrm_from_glb(glb: &[u8], version: u8, table: bool) -> Result<Vec<u8>, String> {
    let file = gltf::binary::Glb::from_slice(glb).map_err(|e| e.to_string())?;
    let mut doc: Value = serde_json::from_slice(&file.json).map_err(|e| e.to_string())?;
    let nodes = doc["nodes"].as_array_mut().ok_or("no nodes")?;
    let original: Vec<String> = nodes
        .iter()
        .map(|n| n["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    for (i, node) in nodes.iter_mut().enumerate() {
        node["name"] = json!(anonymous_name(i));
    }
    let node_of = |bone: &str| {
        original
            .iter()
            .position(|n| n.strip_prefix("mixamorig:") == Some(bone))
            .ok_or_else(|| format!("no bone `{bone}`"))
    };
    // Hair for the spring bones: a root at the back of the head and two strands below it.
    let head = node_of("Head")?;
    let spine2 = node_of("Spine2")?;
    let hair = add_hair(&mut doc, head)?;
    let mut bin = file.bin.map(Cow::into_owned).unwrap_or_default();
    add_hair_mesh(&mut doc, &mut bin, &hair)?;
    let extension = match version {
        1 => {
            let mut bones = serde_json::Map::new();
            for (bone, _, role) in TABLE {
                bones.insert(role.into(), json!({ "node": node_of(bone)? }));
            }
            json!({ "VRMC_vrm": {
                "specVersion": "1.0",
                "meta": {
                    "name": "bevy_ik test avatar (VRM 1.0)",
                    "version": "1",
                    "authors": ["bevy_ik authors"],
                    "licenseUrl": "https://vrm.dev/licenses/1.0/",
                    "otherLicenseUrl": "https://creativecommons.org/publicdomain/zero/1.0/",
                    "avatarPermission": "everyone",
                    "commercialUsage": "corporation",
                    "allowRedistribution": true,
                    "modification": "allowModificationRedistribution"
                },
                "humanoid": { "humanBones": bones }
            }, "VRMC_springBone": spring_bone_1(&hair, head, spine2) })
        }
        0 => {
            let mut bones = Vec::new();
            for (bone, role, _) in TABLE {
                bones.push(
                    json!({ "bone": role, "node": node_of(bone)?, "useDefaultValues": true }),
                );
            }
            // VRM 0.x avatars face −Z: the scene half a turn about +Y under a new root.
            let nodes = doc["nodes"].as_array_mut().ok_or("no nodes")?;
            let root = nodes.len();
            let scene_nodes = doc["scenes"][0]["nodes"].clone();
            doc["nodes"].as_array_mut().ok_or("no nodes")?.push(json!({
                "name": anonymous_name(root),
                "rotation": [0.0, 1.0, 0.0, 0.0],
                "children": scene_nodes
            }));
            doc["scenes"][0]["nodes"] = json!([root]);
            json!({ "VRM": {
                "exporterVersion": "bevy_ik make_vrm",
                "specVersion": "0.0",
                "meta": {
                    "title": "bevy_ik test avatar (VRM 0.x)",
                    "author": "bevy_ik authors",
                    "licenseName": "CC0"
                },
                "humanoid": { "humanBones": bones },
                "secondaryAnimation": secondary_animation_0(&hair, head, spine2)
            }})
        }
        other => return Err(format!("VRM version {other}: expected 0 or 1")),
    };
    if table {
        doc["extensionsUsed"] = if version == 1 {
            json!([
                "VRMC_vrm",
                "VRMC_springBone",
                "VRMC_springBone_extended_collider"
            ])
        } else {
            json!(["VRM"])
        };
        doc["extensions"] = extension;
    }
    let json = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
    gltf::binary::Glb {
        header: file.header,
        json: Cow::Owned(json),
        bin: Some(Cow::Owned(bin)),
    }
    .to_vec()
    .map_err(|e| e.to_string())
}

/// The hair nodes [`add_hair`] makes: the root (at the back of the head) and the two strands
/// below it, root first.
pub struct Hair {
    /// The hair root, a child of the head.
    pub root: usize,
    /// The left and right strands' nodes, top first (the first is a child of the root).
    pub strands: [[usize; HAIR_STRAND_NODES]; 2],
}

/// Nodes per hair strand.
pub const HAIR_STRAND_NODES: usize = 3;

/// Spring parameters of the hair (VRM's meaning): a soft pull to the animated pose, some
/// gravity, moderate drag; a 2 cm hit radius.
const HAIR_STIFFNESS: f32 = 0.6;
const HAIR_GRAVITY: f32 = 0.3;
const HAIR_DRAG: f32 = 0.3;
const HAIR_HIT_RADIUS: f32 = 0.02;

/// Head collider: a sphere in the head's frame (the character's head is about 0.19 m tall,
/// Y up in its bone frame).
const HEAD_SPHERE: ([f32; 3], f32) = ([0.0, 0.1, 0.01], 0.08);
/// Chest collider (VRM 1.0 capsule; VRM 0.x two spheres), in the upper chest's frame.
const CHEST_CAPSULE: ([f32; 3], [f32; 3], f32) = ([0.0, 0.0, 0.0], [0.0, 0.12, 0.0], 0.1);

/// Appends a hair root under node `head` (behind and above the head's origin, in the head's
/// frame: Y up, +Z ahead as the character stands) with two strands of
/// [`HAIR_STRAND_NODES`] nodes hanging down and back from it; node indices of the file are
/// kept (the new nodes go at the end).
///
/// # Errors
/// A message when the document has no such node.
pub fn add_hair(doc: &mut Value, head: usize) -> Result<Hair, String> {
    let nodes = doc["nodes"].as_array_mut().ok_or("no nodes")?;
    let push = |nodes: &mut Vec<Value>, parent: usize, t: [f32; 3]| -> Result<usize, String> {
        let i = nodes.len();
        nodes.push(json!({ "name": anonymous_name(i), "translation": t }));
        let p = nodes.get_mut(parent).ok_or("no parent node")?;
        match p["children"].as_array_mut() {
            Some(c) => c.push(json!(i)),
            None => p["children"] = json!([i]),
        }
        Ok(i)
    };
    let root = push(nodes, head, [0.0, 0.13, -0.1])?;
    let mut strands = [[0; HAIR_STRAND_NODES]; 2];
    for (side, strand) in [-1.0f32, 1.0].into_iter().zip(&mut strands) {
        let mut parent = root;
        for (k, node) in strand.iter_mut().enumerate() {
            let t = if k == 0 {
                [0.04 * side, -0.05, -0.03]
            } else {
                [0.0, -0.07, -0.01]
            };
            *node = push(nodes, parent, t)?;
            parent = *node;
        }
    }
    Ok(Hair { root, strands })
}

/// Radius of the small octahedron drawn at each hair node, metres.
const HAIR_BEAD: f32 = 0.03;

/// Gives every hair node a small octahedron (non-indexed positions appended to the binary
/// chunk, the file's first material), so the strands are seen swinging.
///
/// # Errors
/// A message when the document has no buffer to extend.
pub fn add_hair_mesh(doc: &mut Value, bin: &mut Vec<u8>, hair: &Hair) -> Result<(), String> {
    let r = HAIR_BEAD;
    let tips = [
        [r, 0.0, 0.0],
        [-r, 0.0, 0.0],
        [0.0, r, 0.0],
        [0.0, -r, 0.0],
        [0.0, 0.0, r],
        [0.0, 0.0, -r],
    ];
    // The eight faces, counter-clockwise seen from outside.
    let faces = [
        [0, 2, 4],
        [2, 1, 4],
        [1, 3, 4],
        [3, 0, 4],
        [2, 0, 5],
        [1, 2, 5],
        [3, 1, 5],
        [0, 3, 5],
    ];
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let offset = bin.len();
    for f in faces {
        for v in f {
            for c in tips[v] {
                bin.extend_from_slice(&f32::to_le_bytes(c));
            }
        }
    }
    let length = bin.len() - offset;
    let push = |doc: &mut Value, key: &str, item: Value| -> usize {
        if !doc[key].is_array() {
            doc[key] = json!([]);
        }
        let a = doc[key].as_array_mut().expect("an array");
        a.push(item);
        a.len() - 1
    };
    let view = push(
        doc,
        "bufferViews",
        json!({ "buffer": 0, "byteOffset": offset, "byteLength": length }),
    );
    let accessor = push(
        doc,
        "accessors",
        json!({ "bufferView": view, "componentType": 5126, "count": faces.len() * 3,
                "type": "VEC3", "min": [-r, -r, -r], "max": [r, r, r] }),
    );
    let mut primitive = json!({ "attributes": { "POSITION": accessor } });
    if doc["materials"].as_array().is_some_and(|m| !m.is_empty()) {
        primitive["material"] = json!(0);
    }
    let mesh = push(doc, "meshes", json!({ "primitives": [primitive] }));
    let buffer = doc["buffers"].get_mut(0).ok_or("no buffer to extend")?;
    buffer["byteLength"] = json!(bin.len());
    let nodes = doc["nodes"].as_array_mut().ok_or("no nodes")?;
    for &n in hair.strands.iter().flatten().chain([&hair.root]) {
        nodes[n]["mesh"] = json!(mesh);
    }
    Ok(())
}

/// `VRMC_springBone` 1.0 for the hair: one spring per strand (the root and the strand), a
/// head sphere, a chest capsule and an extended-collider plane behind the chest (its base
/// shape a zero sphere, the fallback for readers without the extension).
fn spring_bone_1(hair: &Hair, head: usize, chest: usize) -> Value {
    let (c, r) = HEAD_SPHERE;
    let (a, b, cr) = CHEST_CAPSULE;
    let joint = |node: usize| {
        json!({ "node": node, "hitRadius": HAIR_HIT_RADIUS, "stiffness": HAIR_STIFFNESS,
                "gravityPower": HAIR_GRAVITY, "gravityDir": [0.0, -1.0, 0.0],
                "dragForce": HAIR_DRAG })
    };
    let springs: Vec<Value> = hair
        .strands
        .iter()
        .enumerate()
        .map(|(i, strand)| {
            let joints: Vec<Value> = std::iter::once(hair.root)
                .filter(|_| i == 0)
                .chain(strand.iter().copied())
                .map(joint)
                .collect();
            json!({ "name": format!("hair{i}"), "joints": joints, "colliderGroups": [0, 1] })
        })
        .collect();
    json!({
        "specVersion": "1.0",
        "colliders": [
            { "node": head, "shape": { "sphere": { "offset": c, "radius": r } } },
            { "node": chest, "shape": { "capsule": { "offset": a, "tail": b, "radius": cr } } },
            { "node": chest, "shape": { "sphere": { "offset": [0.0, 0.0, 0.0], "radius": 0.0 } },
              "extensions": { "VRMC_springBone_extended_collider": { "specVersion": "1.0",
                "shape": { "plane": { "offset": [0.0, 0.0, 0.3], "normal": [0.0, 0.0, -1.0] } } } } }
        ],
        "colliderGroups": [
            { "name": "head", "colliders": [0] },
            { "name": "chest", "colliders": [1, 2] }
        ],
        "springs": springs
    })
}

/// VRM 0.x `secondaryAnimation` for the hair: one bone group rooted at the hair root (which
/// branches into the two strands), sphere colliders on the head and chest. Offsets are written
/// with Z negated, as VRM 0.x files store them.
fn secondary_animation_0(hair: &Hair, head: usize, chest: usize) -> Value {
    let (c, r) = HEAD_SPHERE;
    let (a, b, cr) = CHEST_CAPSULE;
    let xyz = |v: [f32; 3]| json!({ "x": v[0], "y": v[1], "z": -v[2] });
    json!({
        "boneGroups": [{
            "comment": "hair", "stiffiness": HAIR_STIFFNESS, "gravityPower": HAIR_GRAVITY,
            "gravityDir": { "x": 0.0, "y": -1.0, "z": 0.0 }, "dragForce": HAIR_DRAG,
            "center": -1, "hitRadius": HAIR_HIT_RADIUS, "bones": [hair.root],
            "colliderGroups": [0, 1]
        }],
        "colliderGroups": [
            { "node": head, "colliders": [{ "offset": xyz(c), "radius": r }] },
            { "node": chest, "colliders": [
                { "offset": xyz(a), "radius": cr }, { "offset": xyz(b), "radius": cr }
            ] }
        ]
    })
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(version), Some(out)) = (args.first(), args.get(1)) else {
        eprintln!("usage: make_vrm 0|1 OUT.vrm");
        return std::process::ExitCode::FAILURE;
    };
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/character.glb");
    let result = std::fs::read(input)
        .map_err(|e| format!("{input}: {e}"))
        .and_then(|glb| vrm_from_glb(&glb, version.parse().unwrap_or(9), true))
        .and_then(|vrm| std::fs::write(out, vrm).map_err(|e| format!("{out}: {e}")));
    match result {
        Ok(()) => {
            println!("wrote {out}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make_vrm: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
