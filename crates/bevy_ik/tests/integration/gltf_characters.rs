//! The characters in `assets/` (the bundled one and the four CC0 characters made by others)
//! loaded the way a game loads them: through Bevy's asset server and glTF loader in a headless
//! app (no window, no render device), spawned as a `WorldAssetRoot` with `IkHumanoid::auto()`, set
//! up on `WorldInstanceReady`. Then the hand and foot targets are moved and the look-at target
//! swung aside, and the goals are measured on the bones' `GlobalTransform`s (what a renderer
//! would draw): met within a fraction of the character's height, every transform finite.
//!
//! The app is `MinimalPlugins` + `TransformPlugin` + `AssetPlugin` + `WorldSerializationPlugin` +
//! `GltfPlugin` with the asset types the glTF loader writes (meshes, images, clips, skins; the
//! materials are `GltfPlugin`'s own `GltfMaterial` assets, so no render or PBR crate is
//! needed). `App::finish` must run before the first update: `GltfPlugin` registers its
//! loader in `finish`, and until then a `.glb` load waits for it (the file stays
//! `LoadState::Loading` forever).

#![cfg(feature = "vrm")]

// The converter that makes the VRM test avatars (`cargo run --example make_vrm`).
#[path = "../../../../examples/make_vrm.rs"]
mod make_vrm;

use std::time::{Duration, Instant};

use bevy::asset::{AssetPlugin, LoadState};
use bevy::gltf::{GltfAssetLabel, GltfPlugin};
use bevy::image::{CompressedImageFormatSupport, CompressedImageFormats};
use bevy::prelude::*;
use bevy::world_serialization::{WorldAssetRoot, WorldSerializationPlugin};
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;

/// The workspace's `assets/`.
pub(crate) const ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets");

/// A headless app that loads glTF characters from `root`.
pub(crate) fn app(root: &str) -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        TransformPlugin,
        AssetPlugin {
            file_path: root.into(),
            ..default()
        },
        WorldSerializationPlugin,
        GltfPlugin::default(),
        IkPlugin::default(),
    ));
    app.init_asset::<Mesh>()
        .init_asset::<Image>()
        .init_asset::<AnimationClip>()
        .init_asset::<bevy::mesh::skinning::SkinnedMeshInverseBindposes>()
        .insert_resource(CompressedImageFormatSupport(CompressedImageFormats::NONE));
    // Plugins' `finish` (GltfPlugin registers its loader there; IkPlugin the `.vrm` one).
    app.finish();
    app.cleanup();
    app
}

/// Spawns `file`'s first scene with `humanoid` and runs frames until the humanoid is set up.
///
/// # Panics
/// If the file fails to load or the humanoid is not set up within 120 s.
pub(crate) fn spawn_character(app: &mut App, file: &str, humanoid: IkHumanoid) -> Entity {
    let path = GltfAssetLabel::Scene(0).from_asset(file.to_owned());
    let scene: Handle<WorldAsset> = app.world().resource::<AssetServer>().load(path);
    let character = app
        .world_mut()
        .spawn((
            WorldAssetRoot(scene.clone()),
            Transform::default(),
            humanoid,
        ))
        .id();
    let start = Instant::now();
    loop {
        app.update();
        if app.world().get::<IkHumanoidTargets>(character).is_some() {
            return character;
        }
        let state = app.world().resource::<AssetServer>().load_state(&scene);
        if let LoadState::Failed(e) = state {
            panic!("{file}: {e}");
        }
        let status = app.world().get::<IkStatus>(character);
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{file}: not set up after {:?} ({state:?}): {status:?}; {:?}",
            start.elapsed(),
            app.world().get::<IkHumanoidMapping>(character)
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(crate) fn global(app: &App, e: Entity) -> GlobalTransform {
    *app.world().get::<GlobalTransform>(e).expect("a transform")
}

/// What was measured on one character.
#[derive(Debug)]
struct Measured {
    roles: usize,
    /// Largest hand/foot position error over the character's height.
    worst_effector: f32,
    /// Look-at error, radians.
    look_at: f32,
    /// How far the head turned, radians.
    head_turn: f32,
    /// Largest error of a detached foot bone against where it should have moved, over the
    /// height (0 when the rig has none).
    worst_detached: f32,
}

/// Moves the hand and foot targets and the look-at target, runs frames, and measures.
fn drive_and_measure(app: &mut App, character: Entity, file: &str) -> Measured {
    let bones = app
        .world()
        .get::<IkHumanoidBones>(character)
        .unwrap()
        .clone();
    let targets = app
        .world()
        .get::<IkHumanoidTargets>(character)
        .unwrap()
        .clone();
    let bone = |r: HumanoidBone| bones.get(r).unwrap_or_else(|| panic!("{file}: no {r}"));
    let pos = |app: &App, r: HumanoidBone| global(app, bone(r)).translation();
    let hips = pos(app, HumanoidBone::Hips);
    let head = pos(app, HumanoidBone::Head);
    let feet_mid = (pos(app, HumanoidBone::LeftFoot) + pos(app, HumanoidBone::RightFoot)) / 2.0;
    let height = head.distance(feet_mid);
    assert!(
        height.is_finite() && height > 0.0,
        "{file}: height {height}"
    );
    let up = (head - feet_mid).normalize();
    let left =
        (pos(app, HumanoidBone::LeftUpperArm) - pos(app, HumanoidBone::RightUpperArm)).normalize();
    // The body's forward (left × up, whichever way the file faces).
    let forward = left.cross(up).normalize();

    // Detached foot bones and where they rest (before anything moves).
    let detached: Vec<(Entity, Vec3, HumanoidBone)> = match targets.detached_feet {
        None => Vec::new(),
        Some(_) => ["Foot.L", "Foot.R"]
            .into_iter()
            .zip([HumanoidBone::LeftFoot, HumanoidBone::RightFoot])
            .map(|(name, role)| {
                let mut q = app.world_mut().query::<(Entity, &Name, &GlobalTransform)>();
                // The joint (a mesh node of the same name may sit below it): the shallowest.
                let (e, g) = q
                    .iter(app.world())
                    .filter(|(_, n, _)| n.as_str() == name)
                    .map(|(e, _, g)| (e, *g))
                    .min_by_key(|&(e, _)| depth(app, e))
                    .unwrap_or_else(|| panic!("{file}: no {name}"));
                (e, g.translation(), role)
            })
            .collect(),
    };

    // Hands forward by a tenth of the height (and a little toward the hips), feet lifted by a
    // twentieth, the look-at target swung aside: all reachable with the hips held.
    let mut moves: Vec<(Entity, Vec3, HumanoidBone)> = Vec::new();
    for (t, role) in [
        (targets.left_hand, HumanoidBone::LeftHand),
        (targets.right_hand, HumanoidBone::RightHand),
    ] {
        let t = t.unwrap_or_else(|| panic!("{file}: no {role} target"));
        let hand = pos(app, role);
        let delta = ((hips - hand).normalize() * 0.05 + forward * 0.1) * height;
        moves.push((t, delta, role));
    }
    for (t, role) in [
        (targets.left_foot, HumanoidBone::LeftFoot),
        (targets.right_foot, HumanoidBone::RightFoot),
    ] {
        let t = t.unwrap_or_else(|| panic!("{file}: no {role} target"));
        moves.push((t, up * 0.05 * height, role));
    }
    // World deltas into the targets' parent (the character) frame: the character root is at
    // the origin, unrotated, unscaled here.
    for &(t, delta, _) in &moves {
        app.world_mut().get_mut::<Transform>(t).unwrap().translation += delta;
    }
    let look = targets.head.expect("a look-at target");
    let head_g = global(app, bone(HumanoidBone::Head));
    let look_at_rest = global(app, look).translation();
    // The face's forward direction in the head's frame, from the set-up look-at target.
    let face_local = head_g
        .affine()
        .inverse()
        .transform_vector3(look_at_rest - head_g.translation())
        .normalize();
    app.world_mut()
        .get_mut::<Transform>(look)
        .unwrap()
        .translation += left * 0.3 * height;

    for _ in 0..40 {
        app.update();
    }

    let mut worst_effector = 0.0f32;
    for &(t, _, role) in &moves {
        let want = global(app, t).translation();
        let got = pos(app, role);
        if std::env::var_os("IK_VERBOSE").is_some() {
            println!("{file} {role}: want {want} got {got}");
        }
        worst_effector = worst_effector.max(want.distance(got) / height);
    }
    let head_before = head_g.rotation();
    let head_g = global(app, bone(HumanoidBone::Head));
    let head_turn = head_before.angle_between(head_g.rotation());
    let face = head_g.affine().transform_vector3(face_local).normalize();
    let to_target = (global(app, look).translation() - head_g.translation()).normalize();
    let look_at = face.angle_between(to_target);
    let mut worst_detached = 0.0f32;
    for &(e, rest, role) in &detached {
        let delta = moves.iter().find(|m| m.2 == role).unwrap().1;
        let got = global(app, e).translation();
        worst_detached = worst_detached.max(got.distance(rest + delta) / height);
    }
    // Every transform under the character is finite.
    let mut q = app.world_mut().query::<(&GlobalTransform, &Transform)>();
    for (g, t) in q.iter(app.world()) {
        assert!(
            g.affine().is_finite() && t.translation.is_finite() && t.rotation.is_finite(),
            "{file}: a non-finite transform"
        );
    }
    Measured {
        roles: bones.iter().count(),
        worst_effector,
        look_at,
        head_turn,
        worst_detached,
    }
}

fn depth(app: &App, mut e: Entity) -> usize {
    let mut d = 0;
    while let Some(p) = app.world().get::<ChildOf>(e) {
        e = p.parent();
        d += 1;
    }
    d
}

/// Loads, maps, drives and measures one file; asserts the goals are met.
fn check(file: &str, min_roles: usize) -> Measured {
    let mut app = app(ASSETS);
    let character = spawn_character(&mut app, file, IkHumanoid::auto());
    let status = app.world().get::<IkStatus>(character).unwrap().clone();
    assert!(status.ready, "{file}: {status:?}");
    let m = drive_and_measure(&mut app, character, file);
    println!("{file}: {m:?}");
    assert!(m.roles >= min_roles, "{file}: {m:?}");
    assert!(m.worst_effector < 2e-3, "{file}: hands/feet missed: {m:?}");
    assert!(m.look_at < 0.05, "{file}: look-at missed: {m:?}");
    assert!(m.head_turn > 0.1, "{file}: the head did not turn: {m:?}");
    assert!(
        m.worst_detached < 2e-3,
        "{file}: detached feet left behind: {m:?}"
    );
    m
}

#[test]
fn bundled_character() {
    check("character.glb", 22);
}

#[test]
fn kaykit_mannequin() {
    check("kaykit_mannequin.glb", 18);
}

#[test]
fn ual_mannequin() {
    check("ual_mannequin_f.glb", 22);
}

#[test]
fn robot_expressive_with_detached_feet() {
    check("robot_expressive.glb", 18);
}

#[test]
fn quaternius_worker_with_detached_feet() {
    check("quaternius_worker.gltf", 18);
}

/// Writes the bundled character as a VRM `version` avatar (renamed bones; with or without its
/// humanoid table) into a folder of its own, returning the folder.
pub(crate) fn write_vrm(version: u8, table: bool, file: &str) -> String {
    let glb = std::fs::read(format!("{ASSETS}/character.glb")).unwrap();
    let vrm = make_vrm::vrm_from_glb(&glb, version, table).unwrap();
    let dir = format!("{}/vrm_{version}_{table}", env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(format!("{dir}/{file}"), vrm).unwrap();
    dir
}

#[test]
fn vrm_avatars_map_from_their_humanoid_table_and_face_either_way() {
    for version in [0u8, 1] {
        let file = format!("avatar{version}.vrm");
        let dir = write_vrm(version, true, &file);
        let mut app = app(&dir);
        let character = spawn_character(&mut app, &file, IkHumanoid::auto());
        let bones = app
            .world()
            .get::<IkHumanoidBones>(character)
            .unwrap()
            .clone();
        // Every role the table names is mapped to the node it names (the tag put there by
        // the loader), whose name (`joint_07`) no convention maps.
        let mut from_table = 0;
        for (role, e) in bones.iter() {
            let name = app.world().get::<Name>(e).unwrap().as_str().to_owned();
            assert!(name.starts_with("joint_"), "{file}: {role} -> {name}");
            if let Some(tag) = app.world().get::<IkHumanoidBone>(e) {
                assert_eq!(tag.role(), Some(role), "{file}: {name}");
                from_table += 1;
            }
        }
        assert_eq!(from_table, 22, "{file}: roles from the table");
        // Facing: the look-at target was placed ahead of the face, −Z for VRM 0.x, +Z for 1.0.
        let targets = app
            .world()
            .get::<IkHumanoidTargets>(character)
            .unwrap()
            .clone();
        let head = global(&app, bones.get(HumanoidBone::Head).unwrap()).translation();
        let ahead = global(&app, targets.head.unwrap()).translation() - head;
        let facing = if version == 0 { -1.0 } else { 1.0 };
        assert!(
            ahead.z * facing > 0.5 * ahead.length(),
            "{file}: ahead {ahead}"
        );
        let m = drive_and_measure(&mut app, character, &file);
        println!("{file}: {m:?}");
        assert!(m.worst_effector < 2e-3, "{file}: {m:?}");
        assert!(m.look_at < 0.05 && m.head_turn > 0.1, "{file}: {m:?}");
    }
}

#[test]
fn without_its_table_the_renamed_avatar_does_not_map_and_says_why() {
    let file = "no_table.glb";
    let dir = write_vrm(1, false, file);
    let mut app = app(&dir);
    let scene: Handle<WorldAsset> = app
        .world()
        .resource::<AssetServer>()
        .load(GltfAssetLabel::Scene(0).from_asset(file));
    let character = app
        .world_mut()
        .spawn((
            WorldAssetRoot(scene),
            Transform::default(),
            IkHumanoid::auto(),
        ))
        .id();
    let start = Instant::now();
    while app.world().get::<IkHumanoidMapping>(character).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no mapping report"
        );
        app.update();
        std::thread::sleep(Duration::from_millis(1));
    }
    for _ in 0..5 {
        app.update();
    }
    let status = app.world().get::<IkStatus>(character).unwrap();
    assert!(!status.ready);
    assert!(
        matches!(status.last_error, Some(IkError::MissingRole(_))),
        "{status:?}"
    );
    assert!(app.world().get::<IkHumanoidTargets>(character).is_none());
    let mapping = app.world().get::<IkHumanoidMapping>(character).unwrap();
    assert!(
        mapping.summary.contains("missing required"),
        "{}",
        mapping.summary
    );
}

#[test]
fn at_weight_zero_detached_feet_keep_their_animated_pose() {
    let file = "quaternius_worker.gltf";
    let mut app = app(ASSETS);
    let character = spawn_character(&mut app, file, IkHumanoid::auto());
    assert!(
        app.world()
            .get::<IkHumanoidTargets>(character)
            .unwrap()
            .detached_feet
            .is_some()
    );
    app.world_mut()
        .get_mut::<IkHumanoid>(character)
        .unwrap()
        .weight = 0.0;
    let mut q = app.world_mut().query::<(Entity, &Name)>();
    let foot = q
        .iter(app.world())
        .find(|(_, n)| n.as_str() == "Foot.L")
        .map(|(e, _)| e)
        .unwrap();
    let rest = *app.world().get::<Transform>(foot).unwrap();
    let lifted = rest.translation + Vec3::new(0.0, 0.1, 0.05);
    for _ in 0..5 {
        // "Animation" moves the foot control bone every frame, before the IK runs.
        app.world_mut()
            .get_mut::<Transform>(foot)
            .unwrap()
            .translation = lifted;
        app.update();
    }
    let got = app.world().get::<Transform>(foot).unwrap().translation;
    assert!(got.distance(lifted) < 1e-5, "{got} vs {lifted}");
    // Back at weight 1 it follows the leg again (the end bone, at the foot's rest position).
    app.world_mut()
        .get_mut::<IkHumanoid>(character)
        .unwrap()
        .weight = 1.0;
    for _ in 0..5 {
        app.world_mut()
            .get_mut::<Transform>(foot)
            .unwrap()
            .translation = lifted;
        app.update();
    }
    let got = app.world().get::<Transform>(foot).unwrap().translation;
    assert!(
        got.distance(rest.translation) < 1e-4,
        "{got} vs {}",
        rest.translation
    );
}
