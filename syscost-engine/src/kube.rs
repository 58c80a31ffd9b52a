//! Which Kubernetes pod and container a cgroup is: read from the cgroup's path as the
//! kubelet and the container runtimes make it, and, for the names, from the runtime's
//! own files of the container.
//!
//! The paths (the kubelet's pod slice or folder, then the runtime's container):
//!
//! | driver | runtime | path |
//! |---|---|---|
//! | systemd | containerd | `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope` |
//! | systemd | CRI-O | `.../kubepods-besteffort-pod<uid>.slice/crio-<id>.scope` |
//! | systemd | Docker (cri-dockerd) | `.../kubepods-pod<uid>.slice/docker-<id>.scope` |
//! | cgroupfs | containerd, Docker | `/kubepods/burstable/pod<uid>/<id>` |
//! | cgroupfs | CRI-O | `/kubepods/besteffort/pod<uid>/crio-<id>` |
//!
//! (the systemd driver writes the pod's uid with `_` for `-`; a guaranteed pod has no
//! QoS level: `kubepods-pod<uid>.slice`, `/kubepods/pod<uid>`). A container of Docker
//! outside Kubernetes (`/system.slice/docker-<id>.scope`, `/docker/<id>`) has a container
//! id and no pod.
//!
//! The parts are taken only where the kubelet and the runtimes put them, anchored at the
//! hierarchy's root: any user with a delegated cgroup subtree can make directories named
//! like a pod's and a container's inside it, and must not get another pod's labels. So
//! with the systemd driver every slice above the pod's is the one its name says
//! (`a-b-pod<uid>.slice` sits in `/a.slice/a-b.slice`, a kubelet `--cgroup-root`
//! included); with cgroupfs the pod sits in `kubepods[/QOS]` below no systemd unit (a
//! kubelet `--cgroup-root` such as kind's `/kubelet`); Docker's scope sits right in
//! `/system.slice`, its cgroupfs folder in `/docker`. A path seen from inside a cgroup
//! namespace climbs first (`/../..`): what follows must then end the same chain.
//!
//! The names (`namespace`, `pod`, `container`) are not in the path; the runtime keeps
//! them, as annotations or labels, in a file of the container's: containerd in
//! `/run/containerd/io.containerd.runtime.v2.task/k8s.io/<id>/config.json`, CRI-O in
//! `/run/containers/storage/overlay-containers/<id>/userdata/config.json`, Docker in
//! `/var/lib/docker/containers/<id>/config.v2.json`; under `$SYSCOST_HOST_ROOT` when set
//! (where a container mounted the host's filesystem).

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

/// The runtime that made a container's cgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Runtime {
    Containerd,
    Crio,
    Docker,
}

/// What a cgroup's path says of the pod and container it is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Workload {
    /// The pod's uid, with dashes (`3f2c1e8a-...`).
    pub pod_uid: Option<String>,
    /// The container's 64-hex id.
    pub container_id: Option<String>,
    /// Who made the container's cgroup, when its name says (`cri-containerd-`,
    /// `crio-`, `docker-`); a bare id under the cgroupfs driver says nothing.
    pub runtime: Option<Runtime>,
}

/// The names the runtime keeps of a container.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub container: Option<String>,
}

fn is_container_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_pod_uid(s: &str) -> bool {
    // 8-4-4-4-12 hex digits; a static pod's uid is a 32-hex hash instead.
    let groups: Vec<&str> = s.split('-').collect();
    let dashed = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    dashed || (s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The pod uid of a path segment of the kubelet's: `kubepods[-QOS]-pod<uid>.slice`
/// (systemd) or `pod<uid>` (cgroupfs).
fn pod_of(segment: &str) -> Option<String> {
    if let Some(slice) = segment.strip_suffix(".slice") {
        // `kubepods-pod<uid>`, `kubepods-burstable-pod<uid>`, and under a kubelet's
        // `--cgroup-root` its prefix first (`kubelet-kubepods-besteffort-pod<uid>`).
        let (head, uid) = slice.rsplit_once("-pod")?;
        let qos = head
            .strip_suffix("-burstable")
            .or(head.strip_suffix("-besteffort"));
        if !qos.unwrap_or(head).ends_with("kubepods") {
            return None;
        }
        let uid = uid.replace('_', "-");
        return is_pod_uid(&uid).then_some(uid);
    }
    let uid = segment.strip_prefix("pod")?;
    is_pod_uid(uid).then(|| uid.to_string())
}

/// The container of a path segment: `cri-containerd-<id>.scope`, `crio-<id>.scope`,
/// `docker-<id>.scope` (systemd), `crio-<id>` or `<id>` (cgroupfs). CRI-O's monitor
/// (`crio-conmon-<id>`) is not the container.
fn container_of(segment: &str) -> Option<(String, Option<Runtime>)> {
    let name = segment.strip_suffix(".scope").unwrap_or(segment);
    let (id, runtime) = if let Some(id) = name.strip_prefix("cri-containerd-") {
        (id, Some(Runtime::Containerd))
    } else if let Some(id) = name.strip_prefix("crio-") {
        (id, Some(Runtime::Crio))
    } else if let Some(id) = name.strip_prefix("docker-") {
        (id, Some(Runtime::Docker))
    } else {
        (name, None)
    };
    is_container_id(id).then(|| (id.to_string(), runtime))
}

/// What the cgroup at `path` (as /proc/PID/cgroup gives it) is of Kubernetes or Docker;
/// `None` for any other cgroup, and for one whose parts are not where the kubelet and
/// the runtimes put them (see the module's documentation).
pub fn parse(path: &str) -> Option<Workload> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Seen from inside a cgroup namespace: the climb to the common ancestor, then the
    // rest of the chain below it.
    let climbs = segments.iter().take_while(|s| **s == "..").count();
    let relative = climbs > 0;
    let segments = &segments[climbs..];
    let chained = |above: &[&str], expected: &[String]| {
        if relative {
            expected.ends_with(&above.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        } else {
            above.len() == expected.len() && above.iter().zip(expected).all(|(a, e)| a == e)
        }
    };
    if let Some(i) = segments.iter().position(|s| pod_of(s).is_some()) {
        let above = &segments[..i];
        let anchored = match segments[i].strip_suffix(".slice") {
            // systemd: every slice above is the one the pod slice's name says.
            Some(slice) => {
                let (head, _) = slice.rsplit_once("-pod")?;
                let parts: Vec<&str> = head.split('-').collect();
                let expected: Vec<String> = (1..=parts.len())
                    .map(|k| format!("{}.slice", parts[..k].join("-")))
                    .collect();
                chained(above, &expected)
            }
            // cgroupfs: kubepods[/QOS] right above, below no systemd unit.
            None => {
                let qos = above
                    .last()
                    .is_some_and(|q| *q == "burstable" || *q == "besteffort");
                let kubepods = above.len() - usize::from(qos);
                let root = &above[..kubepods.saturating_sub(1)];
                (kubepods >= 1 && above[kubepods - 1] == "kubepods" || relative && kubepods == 0)
                    && root.iter().all(|s| {
                        !s.ends_with(".slice") && !s.ends_with(".scope") && !s.ends_with(".service")
                    })
                    && (relative || root.len() <= 1)
            }
        };
        if !anchored {
            return None;
        }
        let container = segments.get(i + 1).and_then(|s| container_of(s));
        return Some(Workload {
            pod_uid: pod_of(segments[i]),
            runtime: container.as_ref().and_then(|c| c.1),
            container_id: container.map(|c| c.0),
        });
    }
    // Docker outside Kubernetes: `/system.slice/docker-<id>.scope` or `/docker/<id>`.
    let (&last, above) = segments.split_last()?;
    let systemd = last.starts_with("docker-") && last.ends_with(".scope");
    let expected = if systemd { "system.slice" } else { "docker" };
    if !chained(above, &[expected.to_string()]) {
        return None;
    }
    let (id, _) = container_of(last)?;
    if !systemd && last != id {
        return None;
    }
    Some(Workload {
        pod_uid: None,
        container_id: Some(id),
        runtime: Some(Runtime::Docker),
    })
}

/// Where the runtimes keep their containers' files (the host's paths; a DaemonSet
/// mounts them at the same place).
#[derive(Clone, Debug)]
pub struct Roots {
    pub containerd: PathBuf,
    pub crio: PathBuf,
    pub docker: PathBuf,
}

impl Roots {
    /// The runtimes' folders under `host`, where the host's filesystem is (`/`, or where
    /// a container mounted the host's root).
    pub fn under(host: &Path) -> Self {
        Self {
            containerd: host.join("run/containerd/io.containerd.runtime.v2.task/k8s.io"),
            crio: host.join("run/containers/storage/overlay-containers"),
            docker: host.join("var/lib/docker/containers"),
        }
    }
}

/// Where the host's filesystem is: `SYSCOST_HOST_ROOT` (a container that mounted the
/// host's `/` at `/host` says `/host`), `/` unless told.
pub const HOST_ROOT: &str = "SYSCOST_HOST_ROOT";

impl Default for Roots {
    fn default() -> Self {
        let host = std::env::var_os(HOST_ROOT).unwrap_or_else(|| "/".into());
        Self::under(Path::new(&host))
    }
}

/// The names of containers, read from the runtimes' files once per container.
#[derive(Default)]
pub struct Directory {
    roots: Roots,
    known: HashMap<String, Names>,
    /// Containers whose file could not be read (not written yet, not readable), and
    /// when: read again after [`RETRY`].
    missed: HashMap<String, std::time::Instant>,
}

/// Containers whose names are remembered; past it they are forgotten and read again.
const REMEMBERED: usize = 4096;

/// How long a container whose file did not read goes without its names before it is
/// read again.
pub const RETRY: std::time::Duration = std::time::Duration::from_secs(10);

impl Directory {
    pub fn new(roots: Roots) -> Self {
        Self {
            roots,
            known: HashMap::new(),
            missed: HashMap::new(),
        }
    }

    /// The names of `workload`'s container, from whichever runtime's file exists (the
    /// one its cgroup names first).
    pub fn names(&mut self, workload: &Workload) -> Names {
        let Some(id) = &workload.container_id else {
            return Names::default();
        };
        if let Some(n) = self.known.get(id) {
            return n.clone();
        }
        let mut order = vec![Runtime::Containerd, Runtime::Crio, Runtime::Docker];
        if let Some(r) = workload.runtime {
            order.retain(|o| *o != r);
            order.insert(0, r);
        }
        if self.missed.get(id).is_some_and(|t| t.elapsed() < RETRY) {
            return Names::default();
        }
        let Some(names) = order.into_iter().find_map(|r| self.read(r, id)) else {
            if self.missed.len() >= REMEMBERED {
                self.missed.clear();
            }
            self.missed.insert(id.clone(), std::time::Instant::now());
            return Names::default();
        };
        self.missed.remove(id);
        if self.known.len() >= REMEMBERED {
            self.known.clear();
        }
        self.known.insert(id.clone(), names.clone());
        names
    }

    fn read(&self, runtime: Runtime, id: &str) -> Option<Names> {
        let (file, keys): (PathBuf, [&str; 3]) = match runtime {
            Runtime::Containerd => (
                self.roots.containerd.join(id).join("config.json"),
                [
                    "io.kubernetes.cri.sandbox-namespace",
                    "io.kubernetes.cri.sandbox-name",
                    "io.kubernetes.cri.container-name",
                ],
            ),
            Runtime::Crio => (
                self.roots.crio.join(id).join("userdata/config.json"),
                [
                    "io.kubernetes.pod.namespace",
                    "io.kubernetes.pod.name",
                    "io.kubernetes.container.name",
                ],
            ),
            Runtime::Docker => (
                self.roots.docker.join(id).join("config.v2.json"),
                [
                    "io.kubernetes.pod.namespace",
                    "io.kubernetes.pod.name",
                    "io.kubernetes.container.name",
                ],
            ),
        };
        let text = std::fs::read(&file).ok()?;
        let json: serde_json::Value = serde_json::from_slice(&text).ok()?;
        let map = match runtime {
            Runtime::Docker => &json["Config"]["Labels"],
            _ => &json["annotations"],
        };
        let get = |k: &str| map[k].as_str().map(str::to_string);
        Some(Names {
            namespace: get(keys[0]),
            pod: get(keys[1]),
            container: get(keys[2]),
        })
    }

    /// The labels of the cgroup at `path`: `pod_uid`, `container_id`, and `namespace`,
    /// `pod`, `container` where the runtime's files give them; none for a cgroup that
    /// is no container's or pod's.
    pub fn labels(&mut self, path: &str) -> Vec<(&'static str, String)> {
        self.labels_settled(path).0
    }

    /// [`Directory::labels`], and whether they are settled: the cgroup is no
    /// container's, or its container's file was read (one not written yet is read again
    /// after [`RETRY`]).
    pub fn labels_settled(&mut self, path: &str) -> (Vec<(&'static str, String)>, bool) {
        let Some(w) = parse(path) else {
            return (Vec::new(), true);
        };
        let names = self.names(&w);
        let settled = w
            .container_id
            .as_ref()
            .is_none_or(|id| self.known.contains_key(id));
        let labels = [
            ("pod_uid", w.pod_uid),
            ("container_id", w.container_id),
            ("namespace", names.namespace),
            ("pod", names.pod),
            ("container", names.container),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect();
        (labels, settled)
    }
}

/// The pod and container each cgroup is, for a session: the runtimes' files are read
/// here, in the engine, once a container (a [`Directory`]), never by a view. The
/// per-process table names its rows with it ([`crate::process::Names::name_pods`]);
/// the OTLP pusher asks it for its targets' cgroups
/// ([`crate::session::SessionHandle::pod_labels`]).
#[derive(Default)]
pub struct Pods(std::sync::Mutex<Directory>);

impl std::fmt::Debug for Pods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pods")
    }
}

impl From<Directory> for Pods {
    fn from(d: Directory) -> Self {
        Self(std::sync::Mutex::new(d))
    }
}

impl Pods {
    /// [`Directory::labels`] of the cgroup at `path`.
    pub fn labels(&self, path: &str) -> Vec<(&'static str, String)> {
        crate::locks::lock(&self.0).labels(path)
    }

    /// [`Directory::labels_settled`] of the cgroup at `path`.
    pub fn labels_settled(&self, path: &str) -> (Vec<(&'static str, String)>, bool) {
        crate::locks::lock(&self.0).labels_settled(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3b2e5b0e2a9f4c7d8e1f0a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d";
    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

    fn w(pod: Option<&str>, id: Option<&str>, runtime: Option<Runtime>) -> Option<Workload> {
        Some(Workload {
            pod_uid: pod.map(str::to_string),
            container_id: id.map(str::to_string),
            runtime,
        })
    }

    #[test]
    fn the_paths_of_each_driver_and_runtime() {
        let u = UID.replace('-', "_");
        let cases = [
            (
                format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{ID}.scope"
                ),
                w(Some(UID), Some(ID), Some(Runtime::Containerd)),
            ),
            (
                format!(
                    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice/crio-{ID}.scope"
                ),
                w(Some(UID), Some(ID), Some(Runtime::Crio)),
            ),
            (
                format!("/kubepods.slice/kubepods-pod{u}.slice/docker-{ID}.scope"),
                w(Some(UID), Some(ID), Some(Runtime::Docker)),
            ),
            (
                format!("/kubepods/burstable/pod{UID}/{ID}"),
                w(Some(UID), Some(ID), None),
            ),
            (
                format!("/kubepods/pod{UID}/crio-{ID}"),
                w(Some(UID), Some(ID), Some(Runtime::Crio)),
            ),
            // The pod's own cgroup, and CRI-O's monitor in it.
            (
                format!("/kubepods/besteffort/pod{UID}"),
                w(Some(UID), None, None),
            ),
            (
                format!("/kubepods.slice/kubepods-pod{u}.slice/crio-conmon-{ID}.scope"),
                w(Some(UID), None, None),
            ),
            // Under a kubelet's --cgroup-root (kind's /kubelet).
            (
                format!(
                    "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod{u}.slice/cri-containerd-{ID}.scope"
                ),
                w(Some(UID), Some(ID), Some(Runtime::Containerd)),
            ),
            (
                format!("/kubelet/kubepods/burstable/pod{UID}/{ID}"),
                w(Some(UID), Some(ID), None),
            ),
            // Seen from inside a cgroup namespace.
            (
                format!("/../../kubepods-besteffort-pod{u}.slice/cri-containerd-{ID}.scope"),
                w(Some(UID), Some(ID), Some(Runtime::Containerd)),
            ),
            (
                format!(
                    "/../kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice/crio-{ID}.scope"
                ),
                w(Some(UID), Some(ID), Some(Runtime::Crio)),
            ),
            (
                format!("/../../pod{UID}/{ID}"),
                w(Some(UID), Some(ID), None),
            ),
            // Docker alone.
            (
                format!("/system.slice/docker-{ID}.scope"),
                w(None, Some(ID), Some(Runtime::Docker)),
            ),
            (
                format!("/docker/{ID}"),
                w(None, Some(ID), Some(Runtime::Docker)),
            ),
        ];
        for (path, want) in cases {
            assert_eq!(parse(&path), want, "{path}");
        }
    }

    #[test]
    fn other_cgroups_are_none() {
        for path in [
            "/",
            "/user.slice/user-1000.slice/session-2.scope",
            "/system.slice/containerd.service",
            "/kubepods.slice",
            "/kubepods.slice/kubepods-burstable.slice",
            "/kubepods/burstable",
            "/kubepods/podnot-a-uid/abc",
            &format!("/system.slice/docker-{}.scope", &ID[..60]),
            &format!("/elsewhere/{ID}"),
        ] {
            assert_eq!(parse(path), None, "{path}");
        }
    }

    /// A pod's and a container's names made by a user inside a delegated subtree (or
    /// anywhere but where the kubelet and the runtimes put them) label nothing.
    #[test]
    fn pods_and_containers_count_only_where_the_kubelet_puts_them() {
        let u = UID.replace('-', "_");
        let user = "/user.slice/user-1000.slice/user@1000.service";
        for path in [
            format!("{user}/kubepods-pod{u}.slice/cri-containerd-{ID}.scope"),
            format!("{user}/kubepods.slice/kubepods-pod{u}.slice/cri-containerd-{ID}.scope"),
            format!("{user}/kubepods/pod{UID}/{ID}"),
            format!("{user}/kubepods/burstable/pod{UID}/{ID}"),
            format!("/kubepods.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{ID}.scope"),
            format!("/kubepods-pod{u}.slice/cri-containerd-{ID}.scope"),
            format!("/system.slice/x.service/kubepods/pod{UID}/{ID}"),
            format!("/a/b/kubepods/pod{UID}/{ID}"),
            format!("{user}/docker-{ID}.scope"),
            format!("{user}/docker/{ID}"),
            format!("/system.slice/x.service/docker-{ID}.scope"),
            format!("/../{user}/kubepods-pod{u}.slice/cri-containerd-{ID}.scope"),
        ] {
            assert_eq!(parse(&path), None, "{path}");
        }
    }

    #[test]
    fn names_come_from_the_runtimes_files() {
        let dir = std::env::temp_dir().join(format!("syscost-kube-{}", std::process::id()));
        let roots = Roots {
            containerd: dir.join("containerd"),
            crio: dir.join("crio"),
            docker: dir.join("docker"),
        };
        let ids: Vec<String> = (0..3).map(|i| format!("{i}{}", &ID[1..])).collect();
        let write = |path: PathBuf, json: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, json).unwrap();
        };
        write(
            roots.containerd.join(&ids[0]).join("config.json"),
            r#"{"annotations":{"io.kubernetes.cri.sandbox-namespace":"shop","io.kubernetes.cri.sandbox-name":"cart-7d9f","io.kubernetes.cri.container-name":"app"}}"#,
        );
        write(
            roots.crio.join(&ids[1]).join("userdata/config.json"),
            r#"{"annotations":{"io.kubernetes.pod.namespace":"db","io.kubernetes.pod.name":"pg-0","io.kubernetes.container.name":"postgres"}}"#,
        );
        write(
            roots.docker.join(&ids[2]).join("config.v2.json"),
            r#"{"Config":{"Labels":{"io.kubernetes.pod.namespace":"kube-system","io.kubernetes.pod.name":"dns","io.kubernetes.container.name":"coredns"}}}"#,
        );
        let mut d = Directory::new(roots);
        let u = UID.replace('-', "_");
        let labels = d.labels(&format!(
            "/kubepods.slice/kubepods-pod{u}.slice/cri-containerd-{}.scope",
            ids[0]
        ));
        assert_eq!(
            labels,
            vec![
                ("pod_uid", UID.to_string()),
                ("container_id", ids[0].clone()),
                ("namespace", "shop".to_string()),
                ("pod", "cart-7d9f".to_string()),
                ("container", "app".to_string()),
            ]
        );
        // A bare id (cgroupfs) is looked for in every runtime's files.
        let names = d.names(&parse(&format!("/kubepods/pod{UID}/{}", ids[1])).unwrap());
        assert_eq!(names.pod.as_deref(), Some("pg-0"));
        let names = d.names(&parse(&format!("/kubepods/pod{UID}/{}", ids[2])).unwrap());
        assert_eq!(names.container.as_deref(), Some("coredns"));
        // No files: the path's labels only, not settled (the runtime may write them).
        let (labels, settled) = d.labels_settled(&format!("/kubepods/pod{UID}/{ID}"));
        assert_eq!(
            labels,
            vec![
                ("pod_uid", UID.to_string()),
                ("container_id", ID.to_string())
            ]
        );
        assert!(!settled);
        assert_eq!(d.labels_settled("/user.slice"), (vec![], true));
        let (_, settled) = d.labels_settled(&format!("/kubepods/pod{UID}/{}", ids[1]));
        assert!(settled, "its file was read");
        // A file written after its container was first seen is read once the retry is
        // due (the miss made older here rather than waited for).
        write(
            d.roots.containerd.join(ID).join("config.json"),
            r#"{"annotations":{"io.kubernetes.cri.sandbox-name":"late"}}"#,
        );
        let late = parse(&format!("/kubepods/pod{UID}/{ID}")).unwrap();
        assert_eq!(d.names(&late).pod, None, "not before the retry is due");
        *d.missed.get_mut(ID).unwrap() -= RETRY;
        assert_eq!(d.names(&late).pod.as_deref(), Some("late"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
