//! Reads the skeleton of a glTF / GLB file into an [`ik_core::Skeleton`] without any engine:
//! the first skin's joints and every ancestor node up to the scene root (so model space is the
//! scene's space, Z-up armature rotations included), rest transforms from each node's TRS or
//! matrix. Test and bench support only (the plugin loads characters through Bevy's glTF loader).

#![allow(dead_code)]

use ik_core::glam::{Mat4, Quat, Vec3};
use ik_core::{Bone, BoneTransform, Skeleton};

/// The characters made by others that ship in `assets/` (CC0, see `assets/LICENSE.md`) whose
/// legs end in their feet, so the full-body solver can drive them.
pub const CC0_RIGS: [&str; 2] = ["kaykit_mannequin.glb", "ual_mannequin_f.glb"];

/// The path of an asset file: the repository's `assets/` is the first one (with its licence
/// note) above the directory of the package compiling this module (ik-core's tests, or its
/// benchmarks' package one level further down).
pub fn asset_path(file: &str) -> std::path::PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .map(|dir| dir.join("assets"))
        .find(|assets| assets.join("LICENSE.md").is_file())
        .unwrap_or_else(|| here.join("../../assets"))
        .join(file)
}

fn json_of(bytes: &[u8]) -> Result<serde_json::Value, String> {
    if bytes.len() >= 20 && &bytes[0..4] == b"glTF" {
        let len =
            u32::from_le_bytes(bytes[12..16].try_into().map_err(|_| "short header")?) as usize;
        let chunk = bytes.get(20..20 + len).ok_or("truncated JSON chunk")?;
        serde_json::from_slice(chunk).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }
}

fn node_transform(node: &serde_json::Value) -> BoneTransform {
    let floats = |key: &str| -> Option<Vec<f32>> {
        node.get(key)?
            .as_array()?
            .iter()
            .map(|v| v.as_f64().map(|f| f as f32))
            .collect()
    };
    if let Some(m) = floats("matrix")
        && m.len() == 16
    {
        let (scale, rotation, translation) =
            Mat4::from_cols_slice(&m).to_scale_rotation_translation();
        return BoneTransform {
            translation,
            rotation: rotation.normalize(),
            scale,
        };
    }
    let t = floats("translation").map_or(Vec3::ZERO, |v| Vec3::new(v[0], v[1], v[2]));
    let r = floats("rotation").map_or(Quat::IDENTITY, |v| {
        Quat::from_xyzw(v[0], v[1], v[2], v[3]).normalize()
    });
    let s = floats("scale").map_or(Vec3::ONE, |v| Vec3::new(v[0], v[1], v[2]));
    BoneTransform {
        translation: t,
        rotation: r,
        scale: s,
    }
}

/// Loads `assets/<file>`'s skeleton.
///
/// # Errors
/// A message when the file cannot be read or has no skin.
pub fn load_skeleton(file: &str) -> Result<Skeleton, String> {
    let bytes = std::fs::read(asset_path(file)).map_err(|e| format!("{file}: {e}"))?;
    let json = json_of(&bytes)?;
    let nodes = json["nodes"].as_array().ok_or("no nodes")?;
    let mut parent = vec![None; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        for c in n["children"].as_array().into_iter().flatten() {
            if let Some(c) = c.as_u64() {
                parent[c as usize] = Some(i);
            }
        }
    }
    let joints: Vec<usize> = json["skins"][0]["joints"]
        .as_array()
        .ok_or("no skin")?
        .iter()
        .filter_map(|v| v.as_u64().map(|v| v as usize))
        .collect();
    // The joints and all their ancestors.
    let mut keep = vec![false; nodes.len()];
    for &j in &joints {
        let mut n = Some(j);
        while let Some(i) = n {
            if keep[i] {
                break;
            }
            keep[i] = true;
            n = parent[i];
        }
    }
    let index: Vec<Option<usize>> = {
        let mut k = 0;
        keep.iter()
            .map(|&kept| {
                kept.then(|| {
                    k += 1;
                    k - 1
                })
            })
            .collect()
    };
    let bones: Vec<Bone> = nodes
        .iter()
        .enumerate()
        .filter(|&(i, _)| keep[i])
        .map(|(i, n)| {
            let name = n["name"]
                .as_str()
                .map_or_else(|| format!("node{i}"), str::to_owned);
            Bone::new(name, parent[i].and_then(|p| index[p]), node_transform(n))
        })
        .collect();
    Skeleton::try_from_unordered(bones)
        .map(|(s, _)| s)
        .map_err(|e| format!("{file}: {e}"))
}
