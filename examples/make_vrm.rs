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
            }})
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
                "humanoid": { "humanBones": bones }
            }})
        }
        other => return Err(format!("VRM version {other}: expected 0 or 1")),
    };
    if table {
        let name = if version == 1 { "VRMC_vrm" } else { "VRM" };
        doc["extensionsUsed"] = json!([name]);
        doc["extensions"] = extension;
    }
    let json = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
    gltf::binary::Glb {
        header: file.header,
        json: Cow::Owned(json),
        bin: file.bin,
    }
    .to_vec()
    .map_err(|e| e.to_string())
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
