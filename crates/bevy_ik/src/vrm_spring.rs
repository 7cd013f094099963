//! VRM spring bones (feature `vrm`): a `.vrm` file's spring chains and colliders set up as
//! [`IkSpringChain`] stages with [`IkSpringCollider`] entities, with nothing to write.
//!
//! Read from the file while it loads (next to the humanoid table, [`crate::vrm`]):
//!
//! - **VRM 1.0** `VRMC_springBone`: each `springs[]` entry is a chain over its `joints[]`
//!   (the last joint is the end of the one before: [`IkSpringTail::LastJoint`]), with each
//!   joint's own parameters, its `center`, and the colliders of its `colliderGroups[]`.
//!   Colliders are `sphere` or `capsule`; a `VRMC_springBone_extended_collider` extension on a
//!   collider (an inside sphere or capsule, or a plane) replaces its base shape, which is the
//!   fallback for readers without the extension.
//! - **VRM 0.x** `secondaryAnimation`: each `boneGroups[]` entry's `bones[]` are roots; each
//!   root's subtree becomes chains, one per branch (the first child continues a chain, the
//!   others start new ones, the leaf gets VRM 0.x's 0.07 virtual tail), with the group's
//!   parameters (`stiffiness`, sic), `center` (−1: none) and the sphere colliders of its
//!   `colliderGroups[]`. VRM 0.x files store collider offsets with Z negated (Unity's
//!   left-handed export); they are turned back here, as three-vrm does.
//!
//! The loader (the one VRM glTF extension handler of [`crate::vrm`], which reads the humanoid
//! and spring tables together) tags the nodes the springs name with [`IkVrmNode`] and puts the
//! table, [`IkVrmSprings`], on the scene's root entity. When the scene is spawned,
//! `spawn_vrm_springs` finds the character (the nearest entity at or above the scene's root
//! with an [`IkCharacter`], e.g. the entity holding the `WorldAssetRoot`
//! and an `IkHumanoid`; else the scene's root itself), spawns each collider as a child of its
//! node and each chain as a stage entity of that character (after the stages it already
//! has), named `VRM spring <name>`. Bad indices are skipped with a warning.

use bevy::ecs::component::Component;
use bevy::ecs::entity::Entity;
use bevy::ecs::hierarchy::{ChildOf, Children};
use bevy::ecs::name::Name;
use bevy::ecs::query::{With, Without};
use bevy::ecs::reflect::ReflectComponent;
use bevy::ecs::system::{Commands, Query};
use bevy::log::warn;
use bevy::math::Vec3;
use bevy::reflect::prelude::*;
use bevy::transform::components::Transform;
use serde::Deserialize;
use serde_json::Value;

use crate::character::IkCharacter;
use crate::components::BoneRef;
use crate::secondary::{
    IkColliderShape, IkSpringChain, IkSpringCollider, IkSpringJoint, IkSpringTail,
};
use crate::stage::IkStageOf;
use crate::vrm::{VrmError, VrmTable, root_extensions};

/// VRM 0.x's virtual tail past a leaf bone, metres (`three-vrm` and `UniVRM` use 7 cm).
pub const VRM0_LEAF_TAIL: f32 = 0.07;

/// Tags a glTF node named by the file's spring table with its node index (set by the loader).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Default, Debug)]
pub struct IkVrmNode(pub usize);

/// One spring joint of a VRM file: a node and its parameters.
#[derive(Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(Default, Debug)]
pub struct VrmSpringJoint {
    /// glTF node index.
    pub node: usize,
    /// The parameters (the `bone` field unused).
    pub params: IkSpringJoint,
}

/// One spring chain of a VRM file, by node index.
#[derive(Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(Default, Debug)]
pub struct VrmSpringChain {
    /// The spring's name (VRM 1.0 `name`, VRM 0.x `comment`), or its index.
    pub name: String,
    /// The joints, root first.
    pub joints: Vec<VrmSpringJoint>,
    /// What the last joint points at.
    pub tail: IkSpringTail,
    /// Centre node.
    pub center: Option<usize>,
    /// Indices into [`IkVrmSprings::colliders`].
    pub colliders: Vec<usize>,
}

/// A VRM collider: a shape on a node.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Default, Debug)]
pub struct VrmCollider {
    /// glTF node index.
    pub node: usize,
    /// The shape in the node's frame (ik-core's type, not reflected: reflection sees the
    /// default shape, `IkSpringCollider::default()`'s).
    #[reflect(ignore, clone, default = "default_shape")]
    pub shape: IkColliderShape,
}

impl Default for VrmCollider {
    fn default() -> Self {
        Self {
            node: 0,
            shape: default_shape(),
        }
    }
}

fn default_shape() -> IkColliderShape {
    IkSpringCollider::default().shape
}

/// A VRM file's spring table (by node index), put on the scene's root entity by the loader
/// and turned into stage entities when the scene spawns (see the [module docs](self)).
#[derive(Component, Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Default, Debug)]
pub struct IkVrmSprings {
    /// The chains.
    pub chains: Vec<VrmSpringChain>,
    /// The colliders.
    pub colliders: Vec<VrmCollider>,
}

/// Marker: this scene root's [`IkVrmSprings`] were spawned as stages.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Default, Debug)]
pub struct IkVrmSpringsSpawned;

// --- VRMC_springBone 1.0 -------------------------------------------------------------------

#[derive(Deserialize)]
struct Spring1Ext {
    #[serde(default)]
    colliders: Vec<Collider1>,
    #[serde(default, rename = "colliderGroups")]
    collider_groups: Vec<Group1>,
    #[serde(default)]
    springs: Vec<Spring1>,
}

#[derive(Deserialize)]
struct Collider1 {
    node: usize,
    shape: Shape1,
    #[serde(default)]
    extensions: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Shape1 {
    sphere: Option<Sphere1>,
    capsule: Option<Capsule1>,
    plane: Option<Plane1>,
}

#[derive(Deserialize)]
struct Sphere1 {
    #[serde(default)]
    offset: [f32; 3],
    #[serde(default)]
    radius: f32,
    #[serde(default)]
    inside: bool,
}

#[derive(Deserialize)]
struct Capsule1 {
    #[serde(default)]
    offset: [f32; 3],
    #[serde(default)]
    radius: f32,
    #[serde(default)]
    tail: [f32; 3],
    #[serde(default)]
    inside: bool,
}

#[derive(Deserialize)]
struct Plane1 {
    #[serde(default)]
    offset: [f32; 3],
    #[serde(default = "up")]
    normal: [f32; 3],
}

fn up() -> [f32; 3] {
    [0.0, 1.0, 0.0]
}

#[derive(Deserialize)]
struct Group1 {
    #[serde(default)]
    colliders: Vec<usize>,
}

#[derive(Deserialize)]
struct Spring1 {
    #[serde(default)]
    name: Option<String>,
    joints: Vec<Joint1>,
    #[serde(default, rename = "colliderGroups")]
    collider_groups: Vec<usize>,
    #[serde(default)]
    center: Option<usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Joint1 {
    node: usize,
    hit_radius: Option<f32>,
    stiffness: Option<f32>,
    gravity_power: Option<f32>,
    gravity_dir: Option<[f32; 3]>,
    drag_force: Option<f32>,
}

impl Shape1 {
    fn shape(&self) -> Option<IkColliderShape> {
        let v = Vec3::from_array;
        if let Some(s) = &self.sphere {
            Some(if s.inside {
                IkColliderShape::InsideSphere {
                    offset: v(s.offset),
                    radius: s.radius,
                }
            } else {
                IkColliderShape::Sphere {
                    offset: v(s.offset),
                    radius: s.radius,
                }
            })
        } else if let Some(c) = &self.capsule {
            Some(if c.inside {
                IkColliderShape::InsideCapsule {
                    offset: v(c.offset),
                    tail: v(c.tail),
                    radius: c.radius,
                }
            } else {
                IkColliderShape::Capsule {
                    offset: v(c.offset),
                    tail: v(c.tail),
                    radius: c.radius,
                }
            })
        } else {
            self.plane.as_ref().map(|p| IkColliderShape::Plane {
                offset: v(p.offset),
                normal: v(p.normal),
            })
        }
    }
}

// --- VRM 0.x secondaryAnimation ------------------------------------------------------------

#[derive(Deserialize)]
struct Secondary0 {
    #[serde(default, rename = "boneGroups")]
    bone_groups: Vec<BoneGroup0>,
    #[serde(default, rename = "colliderGroups")]
    collider_groups: Vec<ColliderGroup0>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Xyz0 {
    #[serde(default)]
    x: f32,
    #[serde(default)]
    y: f32,
    #[serde(default)]
    z: f32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BoneGroup0 {
    #[serde(default)]
    comment: Option<String>,
    /// (sic)
    stiffiness: Option<f32>,
    gravity_power: Option<f32>,
    gravity_dir: Option<Xyz0>,
    drag_force: Option<f32>,
    #[serde(default)]
    center: Option<i64>,
    hit_radius: Option<f32>,
    #[serde(default)]
    bones: Vec<usize>,
    #[serde(default)]
    collider_groups: Vec<usize>,
}

#[derive(Deserialize)]
struct ColliderGroup0 {
    node: usize,
    #[serde(default)]
    colliders: Vec<Collider0>,
}

#[derive(Deserialize)]
struct Collider0 {
    #[serde(default)]
    offset: Xyz0,
    #[serde(default)]
    radius: f32,
}

impl IkVrmSprings {
    /// Reads the spring table from a glTF document's root extensions (`VRMC_springBone`, else
    /// `VRM.secondaryAnimation`). `Ok(None)` when the document has none.
    ///
    /// # Errors
    /// [`VrmError`] when the extension is malformed or names a node the document does not
    /// have.
    pub fn from_document(document: &gltf::Document) -> Result<Option<Self>, VrmError> {
        let Some((ext, nodes)) = root_extensions(document) else {
            return Ok(None);
        };
        let (table, kind) = if let Some(v) = ext.get("VRMC_springBone") {
            (Self::from_vrm1(v)?, VrmTable::SpringsV1)
        } else if let Some(v) = ext.get("VRM").and_then(|v| v.get("secondaryAnimation")) {
            let children: Vec<Vec<usize>> = document
                .nodes()
                .map(|n| n.children().map(|c| c.index()).collect())
                .collect();
            (Self::from_vrm0(v, &children)?, VrmTable::SpringsV0)
        } else {
            return Ok(None);
        };
        if let Some(node) = table.nodes().find(|&n| n >= nodes) {
            return Err(VrmError::NodeOutOfRange {
                table: kind,
                role: String::new(),
                node,
                nodes,
            });
        }
        Ok(Some(table))
    }

    fn from_vrm1(v: &Value) -> Result<Self, VrmError> {
        let ext = Spring1Ext::deserialize(v).map_err(VrmError::malformed(VrmTable::SpringsV1))?;
        let colliders =
            ext.colliders
                .iter()
                .map(|c| {
                    // The extended shape, where there is one, replaces the base (its fallback).
                    let extended = c
                        .extensions
                        .as_ref()
                        .and_then(|e| e.get("VRMC_springBone_extended_collider"))
                        .and_then(|e| e.get("shape"))
                        .and_then(|s| Shape1::deserialize(s).ok())
                        .and_then(|s| s.shape());
                    let shape = extended.or_else(|| c.shape.shape()).ok_or(
                        VrmError::ColliderWithoutShape {
                            table: VrmTable::SpringsV1,
                            node: c.node,
                        },
                    )?;
                    Ok(VrmCollider {
                        node: c.node,
                        shape,
                    })
                })
                .collect::<Result<Vec<_>, VrmError>>()?;
        let mut chains = Vec::new();
        for (i, s) in ext.springs.iter().enumerate() {
            if s.joints.len() < 2 {
                warn!("bevy_ik: VRMC_springBone spring {i} has fewer than two joints; skipped");
                continue;
            }
            let mut cols: Vec<usize> = s
                .collider_groups
                .iter()
                .filter_map(|&g| ext.collider_groups.get(g))
                .flat_map(|g| g.colliders.iter().copied())
                .filter(|&c| c < colliders.len())
                .collect();
            cols.sort_unstable();
            cols.dedup();
            let d = IkSpringJoint::default();
            chains.push(VrmSpringChain {
                name: s.name.clone().unwrap_or_else(|| i.to_string()),
                joints: s
                    .joints
                    .iter()
                    .map(|j| VrmSpringJoint {
                        node: j.node,
                        params: IkSpringJoint {
                            hit_radius: j.hit_radius.unwrap_or(d.hit_radius),
                            stiffness: j.stiffness.unwrap_or(d.stiffness),
                            gravity_power: j.gravity_power.unwrap_or(d.gravity_power),
                            gravity_dir: j.gravity_dir.map_or(d.gravity_dir, Vec3::from_array),
                            drag_force: j.drag_force.unwrap_or(d.drag_force),
                            ..IkSpringJoint::default()
                        },
                    })
                    .collect(),
                tail: IkSpringTail::LastJoint,
                center: s.center,
                colliders: cols,
            });
        }
        Ok(Self { chains, colliders })
    }

    fn from_vrm0(v: &Value, children: &[Vec<usize>]) -> Result<Self, VrmError> {
        let sec = Secondary0::deserialize(v).map_err(VrmError::malformed(VrmTable::SpringsV0))?;
        let mut colliders = Vec::new();
        // The first collider index of each collider group.
        let mut group_colliders: Vec<Vec<usize>> = Vec::new();
        for g in &sec.collider_groups {
            let mut indices = Vec::new();
            for c in &g.colliders {
                indices.push(colliders.len());
                colliders.push(VrmCollider {
                    node: g.node,
                    shape: IkColliderShape::Sphere {
                        // Z is stored negated in VRM 0.x.
                        offset: Vec3::new(c.offset.x, c.offset.y, -c.offset.z),
                        radius: c.radius,
                    },
                });
            }
            group_colliders.push(indices);
        }
        // VRM 0.x's defaults where a group leaves a value out (UniVRM's).
        let params = |g: &BoneGroup0| IkSpringJoint {
            hit_radius: g.hit_radius.unwrap_or(0.02),
            stiffness: g.stiffiness.unwrap_or(1.0),
            gravity_power: g.gravity_power.unwrap_or(0.0),
            gravity_dir: g
                .gravity_dir
                .map_or(Vec3::NEG_Y, |d| Vec3::new(d.x, d.y, d.z)),
            drag_force: g.drag_force.unwrap_or(0.4),
            ..IkSpringJoint::default()
        };
        let mut chains = Vec::new();
        let mut used = vec![false; children.len()];
        for (gi, g) in sec.bone_groups.iter().enumerate() {
            let p = params(g);
            let cols: Vec<usize> = g
                .collider_groups
                .iter()
                .filter_map(|&c| group_colliders.get(c))
                .flatten()
                .copied()
                .collect();
            let center = g.center.and_then(|c| usize::try_from(c).ok());
            let name = g.comment.clone().unwrap_or_else(|| gi.to_string());
            // Each root's subtree: a chain per branch (first child continues the chain).
            let mut starts: Vec<usize> = g.bones.iter().rev().copied().collect();
            while let Some(start) = starts.pop() {
                if start >= children.len() || used[start] {
                    continue;
                }
                let mut joints = Vec::new();
                let mut node = Some(start);
                while let Some(n) = node {
                    if n >= children.len() || used[n] {
                        break;
                    }
                    used[n] = true;
                    joints.push(VrmSpringJoint {
                        node: n,
                        params: p.clone(),
                    });
                    let kids = &children[n];
                    starts.extend(kids.iter().skip(1).rev());
                    node = kids.first().copied();
                }
                if !joints.is_empty() {
                    chains.push(VrmSpringChain {
                        name: format!("{name}/{}", chains.len()),
                        joints,
                        tail: IkSpringTail::Virtual {
                            length: VRM0_LEAF_TAIL,
                        },
                        center,
                        colliders: cols.clone(),
                    });
                }
            }
        }
        Ok(Self { chains, colliders })
    }

    /// The node indices the table names (to tag while loading).
    pub(crate) fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.chains
            .iter()
            .flat_map(|c| c.joints.iter().map(|j| j.node).chain(c.center))
            .chain(self.colliders.iter().map(|c| c.node))
    }
}

/// Spawns the stages and colliders of every newly spawned VRM scene's spring table.
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn spawn_vrm_springs(
    mut commands: Commands,
    roots: Query<(Entity, &IkVrmSprings), Without<IkVrmSpringsSpawned>>,
    parents: Query<&ChildOf>,
    characters: Query<(), With<IkCharacter>>,
    children: Query<&Children>,
    nodes: Query<&IkVrmNode>,
) {
    for (root, table) in &roots {
        commands.entity(root).insert(IkVrmSpringsSpawned);
        // The character: the nearest at or above the scene root, else the root.
        let mut character = root;
        let mut cur = Some(root);
        while let Some(e) = cur {
            if characters.contains(e) {
                character = e;
                break;
            }
            cur = parents.get(e).ok().map(ChildOf::parent);
        }
        // Node index → entity, over the scene.
        let mut entity_of: Vec<(usize, Entity)> = Vec::new();
        let mut stack = vec![root];
        while let Some(e) = stack.pop() {
            if let Ok(n) = nodes.get(e) {
                entity_of.push((n.0, e));
            }
            if let Ok(c) = children.get(e) {
                stack.extend(c.iter());
            }
        }
        let find = |node: usize| entity_of.iter().find(|(n, _)| *n == node).map(|p| p.1);
        let collider_entities: Vec<Option<Entity>> = table
            .colliders
            .iter()
            .map(|c| {
                let parent = find(c.node)?;
                Some(
                    commands
                        .spawn((
                            Name::new(format!("VRM collider {}", c.node)),
                            Transform::IDENTITY,
                            IkSpringCollider { shape: c.shape },
                            ChildOf(parent),
                        ))
                        .id(),
                )
            })
            .collect();
        for chain in &table.chains {
            let joints: Option<Vec<IkSpringJoint>> = chain
                .joints
                .iter()
                .map(|j| {
                    find(j.node).map(|e| IkSpringJoint {
                        bone: BoneRef::Entity(e),
                        ..j.params.clone()
                    })
                })
                .collect();
            let Some(joints) = joints else {
                warn!(
                    "bevy_ik: VRM spring `{}` names a node the scene does not have; skipped",
                    chain.name
                );
                continue;
            };
            let spring = IkSpringChain {
                joints,
                tail: chain.tail,
                center: chain.center.and_then(find).map(BoneRef::Entity),
                colliders: chain
                    .colliders
                    .iter()
                    .filter_map(|&c| collider_entities.get(c).copied().flatten())
                    .collect(),
                ..IkSpringChain::default()
            };
            commands.spawn((
                Name::new(format!("VRM spring {}", chain.name)),
                spring,
                IkStageOf(character),
            ));
        }
    }
}

/// Registers the components and the system that spawns the stages.
pub(crate) fn build(
    app: &mut bevy::app::App,
    schedule: bevy::ecs::intern::Interned<dyn bevy::ecs::schedule::ScheduleLabel>,
) {
    use bevy::ecs::schedule::IntoScheduleConfigs;
    app.register_type::<IkVrmNode>()
        .register_type::<IkVrmSprings>()
        .register_type::<IkVrmSpringsSpawned>()
        .register_type::<VrmSpringChain>()
        .register_type::<VrmSpringJoint>()
        .register_type::<VrmCollider>();
    app.add_systems(
        schedule,
        spawn_vrm_springs
            .after(bevy::app::AnimationSystems)
            .before(crate::secondary::sync_secondary_stages),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrm::tests::document;

    #[test]
    fn reads_vrm_1_springs_with_extended_colliders() {
        let d = document(
            r#"{"asset":{"version":"2.0"},"nodes":[{"children":[1]},{"children":[2]},{}],
            "extensions":{"VRMC_springBone":{"specVersion":"1.0",
              "colliders":[
                {"node":0,"shape":{"sphere":{"offset":[0,1,0],"radius":0.1}}},
                {"node":0,"shape":{"sphere":{"offset":[0,0,0],"radius":0}},
                 "extensions":{"VRMC_springBone_extended_collider":{"specVersion":"1.0",
                   "shape":{"plane":{"offset":[0,0,0.1],"normal":[0,0,-1]}}}}},
                {"node":1,"shape":{"capsule":{"offset":[0,0,0],"tail":[0,1,0],"radius":0.2}}}],
              "colliderGroups":[{"colliders":[0,1]},{"colliders":[2]}],
              "springs":[{"name":"hair","joints":[{"node":1,"stiffness":0.5,"dragForce":0.3},
                 {"node":2}],"colliderGroups":[0,1],"center":0}]}}}"#,
        );
        let t = IkVrmSprings::from_document(&d).unwrap().unwrap();
        assert_eq!(t.colliders.len(), 3);
        assert_eq!(
            t.colliders[1].shape,
            IkColliderShape::Plane {
                offset: Vec3::new(0.0, 0.0, 0.1),
                normal: Vec3::NEG_Z
            }
        );
        assert!(matches!(
            t.colliders[2].shape,
            IkColliderShape::Capsule { radius, .. } if radius == 0.2
        ));
        let c = &t.chains[0];
        assert_eq!(c.name, "hair");
        assert_eq!(c.joints.iter().map(|j| j.node).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(c.joints[0].params.stiffness, 0.5);
        assert_eq!(c.joints[0].params.drag_force, 0.3);
        // Unset values are the spec's defaults.
        assert_eq!(c.joints[1].params.drag_force, 0.5);
        assert_eq!(c.tail, IkSpringTail::LastJoint);
        assert_eq!(c.center, Some(0));
        assert_eq!(c.colliders, [0, 1, 2]);
    }

    #[test]
    fn reads_vrm_0_groups_as_a_chain_per_branch() {
        // Node 1 branches into 2 → 3 and 4.
        let d = document(
            r#"{"asset":{"version":"2.0"},
            "nodes":[{"children":[1]},{"children":[2,4]},{"children":[3]},{},{}],
            "extensions":{"VRM":{"secondaryAnimation":{
              "boneGroups":[{"comment":"hair","stiffiness":0.7,"gravityPower":0.2,
                "gravityDir":{"x":0,"y":-1,"z":0},"dragForce":0.4,"center":-1,
                "hitRadius":0.03,"bones":[1],"colliderGroups":[0]}],
              "colliderGroups":[{"node":0,"colliders":[{"offset":{"x":0.1,"y":0.2,"z":0.3},
                "radius":0.05}]}]}}}}"#,
        );
        let t = IkVrmSprings::from_document(&d).unwrap().unwrap();
        let nodes: Vec<Vec<usize>> = t
            .chains
            .iter()
            .map(|c| c.joints.iter().map(|j| j.node).collect())
            .collect();
        assert_eq!(nodes, [vec![1, 2, 3], vec![4]]);
        assert_eq!(t.chains[0].center, None);
        assert_eq!(t.chains[0].joints[0].params.stiffness, 0.7);
        assert_eq!(t.chains[0].joints[0].params.hit_radius, 0.03);
        assert_eq!(
            t.chains[1].tail,
            IkSpringTail::Virtual {
                length: VRM0_LEAF_TAIL
            }
        );
        // Z turned back.
        assert_eq!(
            t.colliders[0].shape,
            IkColliderShape::Sphere {
                offset: Vec3::new(0.1, 0.2, -0.3),
                radius: 0.05
            }
        );
    }

    #[test]
    fn no_springs_and_bad_springs() {
        let plain = document(r#"{"asset":{"version":"2.0"},"nodes":[{}]}"#);
        assert_eq!(IkVrmSprings::from_document(&plain), Ok(None));
        let bad = document(
            r#"{"asset":{"version":"2.0"},"nodes":[{}],"extensions":{"VRMC_springBone":
            {"springs":[{"joints":[{"node":0},{"node":9}]}]}}}"#,
        );
        let err = IkVrmSprings::from_document(&bad).unwrap_err();
        assert!(
            matches!(
                err,
                VrmError::NodeOutOfRange {
                    table: VrmTable::SpringsV1,
                    node: 9,
                    ..
                }
            ),
            "{err}"
        );
    }
}
