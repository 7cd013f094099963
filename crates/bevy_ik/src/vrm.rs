//! VRM avatars (feature `vrm`).
//!
//! A `.vrm` file is a glTF binary with a VRM extension that carries the avatar's humanoid bone
//! table: `extensions.VRM.humanoid.humanBones` (VRM 0.x, a list of `{bone, node}`) or
//! `extensions.VRMC_vrm.humanoid.humanBones` (VRM 1.0, a map of role to `{node}`). With the
//! feature on, [`IkPlugin`](crate::IkPlugin) (added after Bevy's `GltfPlugin`, e.g. after
//! `DefaultPlugins`):
//!
//! - registers [`VrmLoader`], Bevy's own [`GltfLoader`] under the `vrm` extension (same
//!   settings, same [`Gltf`] asset, same scenes), so
//!   `asset_server.load(GltfAssetLabel::Scene(0).from_asset("avatar.vrm"))` works;
//! - adds a glTF extension handler ([`GltfExtensionHandler`]) that reads the table with the
//!   `gltf` crate and puts an [`IkHumanoidBone`] on each bone entity it names, in `.vrm`,
//!   `.glb` and `.gltf` files alike. [`IkHumanoid`](crate::IkHumanoid) then maps those roles
//!   from the table and only the others by name, so a VRM avatar whose bone names follow no
//!   convention (`upper_arm.l_Armature`, `J_Bip_L_UpperArm`, or none at all) maps in full.
//!
//! Facing needs nothing: VRM 0.x avatars face −Z and 1.0 avatars +Z, and ik-core derives the
//! body's forward direction from the rest pose (left × up), never from an axis convention.
//!
//! A malformed table (a bone index past the nodes, an unknown layout) is logged as a warning
//! with the reason, and the avatar falls back to mapping by name.

use std::sync::{Arc, Mutex};

use bevy::app::App;
use bevy::asset::io::Reader;
use bevy::asset::{AssetApp, AssetLoader, LoadContext};
use bevy::ecs::entity::Entity;
use bevy::ecs::world::{EntityWorldMut, World};
use bevy::gltf::extensions::{
    ErasedGltfExtensionHandler, GltfExtensionHandler, GltfExtensionHandlers,
};
use bevy::gltf::{
    DefaultGltfImageSampler, Gltf, GltfError, GltfLoader, GltfLoaderSettings, GltfPlugin,
};
use bevy::image::{CompressedImageFormatSupport, CompressedImageFormats, ImageSamplerDescriptor};
use bevy::log::warn;
use bevy::platform::collections::HashMap;
use bevy::reflect::TypePath;
use ik_core::humanoid::HumanoidBone;
use serde::Deserialize;
use thiserror::Error;

use crate::humanoid::IkHumanoidBone;
use crate::vrm_spring::{IkVrmNode, IkVrmSprings};

/// The VRM extension an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VrmTable {
    /// VRM 1.0's humanoid table (`VRMC_vrm.humanoid`).
    HumanoidV1,
    /// VRM 0.x's humanoid table (`VRM.humanoid`).
    HumanoidV0,
    /// VRM 1.0's spring bones (`VRMC_springBone`).
    SpringsV1,
    /// VRM 0.x's spring bones (`VRM.secondaryAnimation`).
    SpringsV0,
}

impl core::fmt::Display for VrmTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::HumanoidV1 => "VRMC_vrm humanoid",
            Self::HumanoidV0 => "VRM humanoid",
            Self::SpringsV1 => "VRMC_springBone",
            Self::SpringsV0 => "VRM secondaryAnimation",
        })
    }
}

/// Why a VRM table could not be read ([`VrmHumanoidTable::from_document`],
/// [`IkVrmSprings::from_document`]).
#[derive(Clone, Debug, Error)]
#[non_exhaustive]
pub enum VrmError {
    /// The extension's JSON is not the shape the VRM specification gives.
    #[error("{table}: {source}")]
    Malformed {
        /// The table.
        table: VrmTable,
        /// The JSON error (shared, so the error stays `Clone`).
        source: Arc<serde_json::Error>,
    },
    /// The table names a glTF node the document does not have.
    #[error("{table}: `{role}` names node {node}, but the file has {nodes} nodes")]
    NodeOutOfRange {
        /// The table.
        table: VrmTable,
        /// The role or chain that names the node (empty for a spring collider or joint).
        role: String,
        /// The node index named.
        node: usize,
        /// How many nodes the document has.
        nodes: usize,
    },
    /// A spring collider has no shape this crate knows (sphere, capsule).
    #[error("{table}: collider on node {node} has no shape")]
    ColliderWithoutShape {
        /// The table.
        table: VrmTable,
        /// The collider's node.
        node: usize,
    },
}

impl VrmError {
    pub(crate) fn malformed(table: VrmTable) -> impl FnOnce(serde_json::Error) -> Self {
        move |e| Self::Malformed {
            table,
            source: Arc::new(e),
        }
    }
}

/// Equal when the same problem at the same place (a JSON error: the same table, category,
/// line and column).
impl PartialEq for VrmError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Malformed { table, source },
                Self::Malformed {
                    table: t2,
                    source: s2,
                },
            ) => {
                table == t2
                    && source.classify() == s2.classify()
                    && (source.line(), source.column()) == (s2.line(), s2.column())
            }
            (
                Self::NodeOutOfRange {
                    table,
                    role,
                    node,
                    nodes,
                },
                Self::NodeOutOfRange {
                    table: t2,
                    role: r2,
                    node: n2,
                    nodes: c2,
                },
            ) => (table, role, node, nodes) == (t2, r2, n2, c2),
            (
                Self::ColliderWithoutShape { table, node },
                Self::ColliderWithoutShape {
                    table: t2,
                    node: n2,
                },
            ) => (table, node) == (t2, n2),
            _ => false,
        }
    }
}

/// Which VRM version a humanoid table came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VrmVersion {
    /// VRM 0.x (`extensions.VRM`): avatars face −Z.
    V0,
    /// VRM 1.0 (`extensions.VRMC_vrm`): avatars face +Z.
    V1,
}

/// A VRM file's humanoid table: `(role name, glTF node index)` pairs, as the file has them
/// (role names in VRM spelling: `hips`, `leftUpperArm`, …; fingers and eyes included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VrmHumanoidTable {
    /// The version of the extension the table came from.
    pub version: VrmVersion,
    /// `(role name, node index)`.
    pub bones: Vec<(String, usize)>,
}

#[derive(Deserialize)]
struct Vrm1 {
    humanoid: Humanoid1,
}

#[derive(Deserialize)]
struct Humanoid1 {
    #[serde(rename = "humanBones")]
    human_bones: HashMap<String, Node1>,
}

#[derive(Deserialize)]
struct Node1 {
    node: usize,
}

#[derive(Deserialize)]
struct Vrm0 {
    humanoid: Humanoid0,
}

#[derive(Deserialize)]
struct Humanoid0 {
    #[serde(rename = "humanBones")]
    human_bones: Vec<Bone0>,
}

#[derive(Deserialize)]
struct Bone0 {
    bone: String,
    node: usize,
}

impl VrmHumanoidTable {
    /// Reads the table from a glTF document's root extensions (VRM 1.0's `VRMC_vrm` when both
    /// are present). `Ok(None)` when the document has no VRM extension.
    ///
    /// # Errors
    /// [`VrmError`] when a VRM extension is there but its humanoid table is malformed
    /// (missing, of the wrong shape, or naming a node the document does not have).
    pub fn from_document(document: &gltf::Document) -> Result<Option<Self>, VrmError> {
        let Some((ext, nodes)) = root_extensions(document) else {
            return Ok(None);
        };
        let table = if let Some(v) = ext.get("VRMC_vrm") {
            let vrm = Vrm1::deserialize(v).map_err(VrmError::malformed(VrmTable::HumanoidV1))?;
            let mut bones: Vec<(String, usize)> = vrm
                .humanoid
                .human_bones
                .into_iter()
                .map(|(role, n)| (role, n.node))
                .collect();
            bones.sort_unstable();
            Self {
                version: VrmVersion::V1,
                bones,
            }
        } else if let Some(v) = ext.get("VRM") {
            let vrm = Vrm0::deserialize(v).map_err(VrmError::malformed(VrmTable::HumanoidV0))?;
            Self {
                version: VrmVersion::V0,
                bones: vrm
                    .humanoid
                    .human_bones
                    .into_iter()
                    .map(|b| (b.bone, b.node))
                    .collect(),
            }
        } else {
            return Ok(None);
        };
        if let Some((role, node)) = table.bones.iter().find(|(_, n)| *n >= nodes) {
            return Err(VrmError::NodeOutOfRange {
                table: match table.version {
                    VrmVersion::V1 => VrmTable::HumanoidV1,
                    VrmVersion::V0 => VrmTable::HumanoidV0,
                },
                role: role.clone(),
                node: *node,
                nodes,
            });
        }
        Ok(Some(table))
    }

    /// The role of glTF node `node`, if the table names it with a role `bevy_ik` knows.
    #[must_use]
    pub fn role_of(&self, node: usize) -> Option<HumanoidBone> {
        self.bones
            .iter()
            .filter(|(_, n)| *n == node)
            .find_map(|(role, _)| HumanoidBone::from_vrm_name(role))
    }
}

/// A glTF document's root extensions (`None`: it has none) and its node count: where the VRM
/// tables are, and the bound their node indices are checked against.
pub(crate) fn root_extensions(
    document: &gltf::Document,
) -> Option<(&serde_json::Map<String, serde_json::Value>, usize)> {
    Some((document.extensions()?, document.nodes().len()))
}

/// The glTF extension handler of VRM files, one for both tables it reads while a file loads
/// (state per load, from the file's root): the humanoid table tags bones with
/// [`IkHumanoidBone`]; the spring table ([`crate::vrm_spring`]) tags the nodes it names with
/// [`IkVrmNode`] and goes on the scene's root as [`IkVrmSprings`].
#[derive(Clone, Default)]
struct VrmExtension {
    humanoid: Option<VrmHumanoidTable>,
    springs: Option<IkVrmSprings>,
}

impl GltfExtensionHandler for VrmExtension {
    fn dyn_clone(&self) -> Box<dyn ErasedGltfExtensionHandler> {
        Box::new(self.clone())
    }

    fn on_root(
        &mut self,
        _load_context: &mut LoadContext<'_>,
        gltf: &gltf::Gltf,
        _settings: &GltfLoaderSettings,
    ) {
        self.humanoid = VrmHumanoidTable::from_document(&gltf.document)
            .inspect_err(|e| warn!("bevy_ik: {e}; the avatar's bones are mapped by name instead"))
            .ok()
            .flatten();
        self.springs = IkVrmSprings::from_document(&gltf.document)
            .inspect_err(|e| warn!("bevy_ik: {e}; the avatar's spring bones are not set up"))
            .ok()
            .flatten();
    }

    fn on_gltf_node(
        &mut self,
        _load_context: &mut LoadContext<'_>,
        gltf_node: &gltf::Node,
        entity: &mut EntityWorldMut,
    ) {
        let node = gltf_node.index();
        if let Some(role) = self.humanoid.as_ref().and_then(|t| t.role_of(node)) {
            entity.insert(IkHumanoidBone::new(role));
        }
        if self
            .springs
            .as_ref()
            .is_some_and(|t| t.nodes().any(|n| n == node))
        {
            entity.insert(IkVrmNode(node));
        }
    }

    fn on_scene_completed(
        &mut self,
        _load_context: &mut LoadContext<'_>,
        _scene: &gltf::Scene,
        world_root_id: Entity,
        scene_world: &mut World,
    ) {
        if let Some(table) = &self.springs
            && let Ok(mut root) = scene_world.get_entity_mut(world_root_id)
        {
            root.insert(table.clone());
        }
    }
}

/// Bevy's [`GltfLoader`] under the `vrm` file extension: a `.vrm` loads as the [`Gltf`] asset
/// it is (scenes, meshes, materials, animations), with the loader settings of any glTF.
#[derive(TypePath)]
pub struct VrmLoader(pub GltfLoader);

impl AssetLoader for VrmLoader {
    type Asset = Gltf;
    type Settings = GltfLoaderSettings;
    type Error = GltfError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        settings: &GltfLoaderSettings,
        load_context: &mut LoadContext<'_>,
    ) -> Result<Gltf, GltfError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        GltfLoader::load_gltf(&self.0, &bytes, load_context, settings).await
    }

    fn extensions(&self) -> &[&str] {
        &["vrm"]
    }
}

/// Registers the `.vrm` loader and the humanoid-table handler: at `finish`, once Bevy's
/// `GltfPlugin` has made its own loader (it shares the extension handlers and the default
/// sampler with it). Without a `GltfPlugin` nothing is registered.
pub(crate) fn finish(app: &mut App) {
    // The glTF loader's own settings (coordinate conversion, custom vertex attributes, skinned
    // mesh bounds), so a `.vrm` loads exactly as the same file named `.glb` would.
    let Some(gltf_plugin) = app.get_added_plugins::<GltfPlugin>().first().map(|p| {
        (
            p.custom_vertex_attributes.clone(),
            p.convert_coordinates,
            p.skinned_mesh_bounds_policy,
        )
    }) else {
        return;
    };
    let (custom_vertex_attributes, default_convert_coordinates, default_skinned_mesh_bounds_policy) =
        gltf_plugin;
    let world = app.world_mut();
    let handlers = world
        .get_resource_or_init::<GltfExtensionHandlers>()
        .0
        .clone();
    handlers
        .write_blocking()
        .push(Box::new(VrmExtension::default()));
    let supported_compressed_formats = world
        .get_resource::<CompressedImageFormatSupport>()
        .map_or(CompressedImageFormats::NONE, |s| s.0);
    let default_sampler = world.get_resource::<DefaultGltfImageSampler>().map_or_else(
        || Arc::new(Mutex::new(ImageSamplerDescriptor::linear())),
        DefaultGltfImageSampler::get_internal,
    );
    app.register_asset_loader(VrmLoader(GltfLoader {
        supported_compressed_formats,
        custom_vertex_attributes,
        default_sampler,
        default_convert_coordinates,
        extensions: handlers,
        default_skinned_mesh_bounds_policy,
    }));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The glTF document of `json` (the VRM readers' tests, here and in `vrm_spring`).
    pub(crate) fn document(json: &str) -> gltf::Document {
        gltf::Gltf::from_slice(json.as_bytes())
            .expect("valid glTF")
            .document
    }

    const NODES: &str = r#""nodes":[{"name":"a"},{"name":"b"},{"name":"c"}]"#;

    #[test]
    fn reads_vrm_1_and_0_tables() {
        let v1 = document(&format!(
            r#"{{"asset":{{"version":"2.0"}},{NODES},"extensionsUsed":["VRMC_vrm"],
            "extensions":{{"VRMC_vrm":{{"specVersion":"1.0","humanoid":{{"humanBones":
            {{"hips":{{"node":0}},"leftUpperArm":{{"node":2}},"leftThumbMetacarpal":{{"node":1}}}}}}}}}}}}"#
        ));
        let t = VrmHumanoidTable::from_document(&v1).unwrap().unwrap();
        assert_eq!(t.version, VrmVersion::V1);
        assert_eq!(t.role_of(0), Some(HumanoidBone::Hips));
        assert_eq!(t.role_of(2), Some(HumanoidBone::LeftUpperArm));
        // A finger role bevy_ik does not drive.
        assert_eq!(t.role_of(1), None);

        let v0 = document(&format!(
            r#"{{"asset":{{"version":"2.0"}},{NODES},"extensions":{{"VRM":{{"humanoid":
            {{"humanBones":[{{"bone":"hips","node":1,"useDefaultValues":true}},
            {{"bone":"head","node":2}}]}}}}}}}}"#
        ));
        let t = VrmHumanoidTable::from_document(&v0).unwrap().unwrap();
        assert_eq!(t.version, VrmVersion::V0);
        assert_eq!(t.role_of(1), Some(HumanoidBone::Hips));
        assert_eq!(t.role_of(2), Some(HumanoidBone::Head));
        assert_eq!(t.role_of(0), None);
    }

    #[test]
    fn no_table_and_bad_tables() {
        let plain = document(&format!(r#"{{"asset":{{"version":"2.0"}},{NODES}}}"#));
        assert_eq!(VrmHumanoidTable::from_document(&plain), Ok(None));
        let out_of_range = document(&format!(
            r#"{{"asset":{{"version":"2.0"}},{NODES},"extensions":{{"VRMC_vrm":
            {{"humanoid":{{"humanBones":{{"hips":{{"node":7}}}}}}}}}}}}"#
        ));
        let err = VrmHumanoidTable::from_document(&out_of_range).unwrap_err();
        assert!(
            matches!(
                err,
                VrmError::NodeOutOfRange {
                    table: VrmTable::HumanoidV1,
                    node: 7,
                    ..
                }
            ),
            "{err}"
        );
        let wrong_shape = document(&format!(
            r#"{{"asset":{{"version":"2.0"}},{NODES},"extensions":{{"VRM":
            {{"humanoid":{{"humanBones":{{"hips":3}}}}}}}}}}"#
        ));
        assert!(matches!(
            VrmHumanoidTable::from_document(&wrong_shape),
            Err(VrmError::Malformed {
                table: VrmTable::HumanoidV0,
                ..
            })
        ));
    }
}
