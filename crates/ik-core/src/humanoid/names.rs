//! Bone-name recognition: splits a name into lowercase words (separators `:` `_` `.` `-` space,
//! camelCase and letter/digit boundaries), strips known prefixes and side markers, and looks the
//! remaining words up in one table. Anything left over (`index`, `end`, `twist` on the wrong
//! bone, `ORG`, …) makes the whole name unrecognised, so finger, end and helper bones never
//! match a limb role.

use super::bones::{HumanoidBone, Side};

/// What a recognised name says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Classified {
    /// The role (for numbered spine bones always `Spine`).
    pub role: HumanoidBone,
    /// A trailing number (`Spine2` → 2, `spine.003` → 3, `DEF-forearm.L.001` → 1), if any.
    pub number: Option<u32>,
}

fn push_words(chunk: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = chunk.chars().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let (a, b) = (chars[i - 1], chars[i]);
        let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        let boundary = (a.is_lowercase() && b.is_uppercase())
            || (a.is_uppercase() && b.is_uppercase() && next_lower)
            || (a.is_alphabetic() && b.is_ascii_digit())
            || (a.is_ascii_digit() && b.is_alphabetic());
        if boundary {
            out.push(chars[start..i].iter().collect::<String>().to_lowercase());
            start = i;
        }
    }
    if start < chars.len() {
        out.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
}

/// Splits a bone name into lowercase words, dropping any `namespace:` prefix.
pub(crate) fn words(name: &str) -> Vec<String> {
    let name = name.rsplit(':').next().unwrap_or(name);
    let mut out = Vec::new();
    for chunk in name.split(|c: char| !c.is_alphanumeric()) {
        if !chunk.is_empty() {
            push_words(chunk, &mut out);
        }
    }
    out
}

fn is_number(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())
}

/// Removes leading rig prefixes (`mixamorig`, `DEF`, `J_Bip`, `Bip01`, `CC_Base`, `b_`,
/// `Armature`) and the exporter suffix `_Armature` (Blender's VRM export, `upper_arm.l_Armature`).
fn strip_prefixes(w: &mut Vec<String>) {
    loop {
        let n = match w.first().map(String::as_str) {
            Some(p) if p.starts_with("mixamorig") => {
                1 + usize::from(w.get(1).is_some_and(|x| is_number(x)))
            }
            Some("def" | "b" | "armature") => 1,
            Some("j") if w.get(1).is_some_and(|x| x == "bip") => 2,
            Some("bip") => 1 + usize::from(w.get(1).is_some_and(|x| is_number(x))),
            Some("cc") if w.get(1).is_some_and(|x| x == "base") => 2,
            _ => 0,
        };
        if n == 0 || n >= w.len() {
            break;
        }
        w.drain(..n);
    }
    while w.len() > 1 && w.last().is_some_and(|x| x == "armature") {
        w.pop();
    }
}

/// Classifies a bone name; `None` when it names no humanoid role.
pub(crate) fn classify(name: &str) -> Option<Classified> {
    let mut w = words(name);
    strip_prefixes(&mut w);
    // A glued lowercase side prefix: `leftupperarm`, `RIGHTFOOT`.
    if let Some(first) = w.first().cloned() {
        for p in ["left", "right"] {
            if first.len() > p.len() && first.starts_with(p) {
                w[0] = first[p.len()..].to_owned();
                w.insert(0, p.to_owned());
                break;
            }
        }
    }
    let mut side = None;
    let mut center = false;
    let mut number = None;
    let mut key = String::new();
    for word in &w {
        let s = match word.as_str() {
            "l" | "left" => Some(Side::Left),
            "r" | "right" => Some(Side::Right),
            "c" | "center" | "centre" | "mid" => {
                center = true;
                continue;
            }
            x if is_number(x) => {
                number = x.parse().ok();
                continue;
            }
            x => {
                key.push_str(x);
                continue;
            }
        };
        if side.is_some_and(|old| Some(old) != s) {
            return None;
        }
        side = s;
    }
    use HumanoidBone as B;
    let role = match side {
        None => match key.as_str() {
            "hips" | "hip" | "pelvis" => B::Hips,
            "spine" | "abdomen" | "torso" | "waist" => B::Spine,
            "chest" | "thorax" => B::Chest,
            "upperchest" | "chestupper" => B::UpperChest,
            "neck" => B::Neck,
            "head" => B::Head,
            _ => return None,
        },
        Some(_) if center => return None,
        Some(side) => {
            let left = match key.as_str() {
                "shoulder" | "clavicle" | "collar" | "collarbone" => B::LeftShoulder,
                "upperarm" | "arm" | "uparm" => B::LeftUpperArm,
                "lowerarm" | "forearm" | "elbow" => B::LeftLowerArm,
                "lowerarmtwist" | "forearmtwist" | "lowerarmroll" | "forearmroll" => {
                    B::LeftLowerArmTwist
                }
                "hand" | "wrist" | "palm" => B::LeftHand,
                "upperleg" | "upleg" | "thigh" | "hip" => B::LeftUpperLeg,
                "lowerleg" | "leg" | "shin" | "calf" | "knee" => B::LeftLowerLeg,
                "foot" | "ankle" => B::LeftFoot,
                "toes" | "toe" | "toebase" | "ball" => B::LeftToes,
                _ => return None,
            };
            left.on(side)
        }
    };
    Some(Classified { role, number })
}

/// Whether the (prefix-stripped) name is a centre-line spine/neck/head word, numbered or not
/// (`spine.004` in Rigify is the neck).
pub(crate) fn is_center_line(name: &str) -> bool {
    classify(name).is_some_and(|c| {
        matches!(
            c.role,
            HumanoidBone::Spine
                | HumanoidBone::Chest
                | HumanoidBone::UpperChest
                | HumanoidBone::Neck
                | HumanoidBone::Head
        )
    })
}

/// Whether the name is written in capitals only (`HEAD`, `FOOT_L`): control rigs name their
/// controls so; a tie-break against a deform bone of the same role.
pub(crate) fn is_all_caps(name: &str) -> bool {
    let mut letters = name.chars().filter(|c| c.is_alphabetic());
    let first_two = letters.clone().take(2).count() == 2;
    first_two && letters.all(char::is_uppercase)
}

/// Whether the name marks the end (tip) of a bone: `LowerLeg.L_end`, `ball_leaf_l`, `head_tip`.
pub(crate) fn is_end_marker(name: &str) -> bool {
    words(name)
        .iter()
        .any(|w| matches!(w.as_str(), "end" | "leaf" | "tip" | "top" | "nub"))
}

/// Whether the name marks a twist/roll helper (`upperarm_twist_01_l`, `thigh_roll.L`).
pub(crate) fn is_twist_helper(name: &str) -> bool {
    words(name).iter().any(|w| w == "twist" || w == "roll")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_every_separator_style() {
        assert_eq!(words("mixamorig:LeftForeArm"), ["left", "fore", "arm"]);
        assert_eq!(words("J_Bip_L_UpperArm"), ["j", "bip", "l", "upper", "arm"]);
        assert_eq!(
            words("DEF-upper_arm.L.001"),
            ["def", "upper", "arm", "l", "001"]
        );
        assert_eq!(words("LHand"), ["l", "hand"]);
        assert_eq!(words("Spine2"), ["spine", "2"]);
        assert_eq!(
            words("lowerarm_twist_01_l"),
            ["lowerarm", "twist", "01", "l"]
        );
        assert_eq!(words("Left Up Leg"), ["left", "up", "leg"]);
    }

    #[test]
    fn exporter_prefixes_and_suffixes_are_dropped() {
        use HumanoidBone as B;
        let role = |n: &str| classify(n).map(|c| c.role);
        assert_eq!(role("upper_arm.l_Armature"), Some(B::LeftUpperArm));
        assert_eq!(role("pelvis_Armature"), Some(B::Hips));
        assert_eq!(role("b_LeftUpperArm_09"), Some(B::LeftUpperArm));
        assert_eq!(classify("b_LeftUpperArm_09").unwrap().number, Some(9));
        assert_eq!(role("Armature|Hips"), Some(B::Hips));
        assert_eq!(role("b_Head_05"), Some(B::Head));
        // A name that is only the prefix or suffix stays itself.
        assert_eq!(role("Armature"), None);
        assert_eq!(role("b"), None);
        assert!(is_all_caps("HEAD") && is_all_caps("FOOT_L") && !is_all_caps("Head"));
        assert!(!is_all_caps("L") && is_end_marker("LowerLeg.L_end") && !is_end_marker("Leg"));
    }

    #[test]
    fn numbers_are_kept() {
        assert_eq!(classify("spine.003").unwrap().number, Some(3));
        assert_eq!(classify("mixamorig:Spine").unwrap().number, None);
        assert_eq!(classify("spine_05").unwrap().number, Some(5));
    }
}
