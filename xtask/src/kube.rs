//! The Kubernetes deployment, checked without a cluster (none runs on this machine kind):
//!
//! 1. every manifest of deploy/kubernetes, and the folder rendered by `kubectl
//!    kustomize`, against the real schemas of each Kubernetes release from 1.28 to 1.37
//!    (`kubernetes-validate --strict`), then what no schema checks: the selectors match
//!    the labels, the capabilities are those docs/kubernetes.md lists, the ports agree;
//! 2. the image (`cargo xtask image`), built twice to the same digest;
//! 3. the image run by podman with runc with exactly the DaemonSet's privileges (read
//!    from the rendered manifests: its capabilities, user, hostPID, a cgroup namespace of
//!    its own, a read-only root, the same host mounts read-only, the same arguments and
//!    environment): a host process in a cgroup where the kubelet and containerd (systemd
//!    driver) put a pod's container makes a known number of calls, and the endpoint
//!    counts them exactly with the pod's uid, the container's id and the names from
//!    containerd's file; then the same run without each capability in turn ends with
//!    syscost's one-line message.

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail, ensure};
use serde_json::Value;

use crate::{image, setup::output};

/// The Kubernetes releases the manifests are checked against.
const VERSIONS: std::ops::RangeInclusive<u32> = 28..=37;

/// How long the pod check waits for one event (the endpoint's first line, the counts)
/// before it fails saying what it waited for.
const PATIENCE: Duration = Duration::from_secs(120);

pub fn check(root: &Path, deb: &Path) -> Result<()> {
    crate::setup::kube_tools()?;
    sweep_gone_checks();
    let objects = manifests_check(root)?;
    let out = root.join("target/image");
    let first = image::build(root, deb, &out.join("again"))?;
    let image = image::build(root, deb, &out)?;
    ensure!(
        first.digest == image.digest,
        "the image is not reproducible: {} then {}",
        first.digest,
        image.digest
    );
    let _ = std::fs::remove_dir_all(out.join("again"));
    println!(
        "image: {} is {}, twice",
        image.archive.display(),
        image.digest
    );
    pod_check(root, &image, &objects)
}

/// The objects of the rendered folder, by kind.
type Objects = BTreeMap<String, Value>;

fn manifests_check(root: &Path) -> Result<Objects> {
    let dir = root.join("deploy/kubernetes");
    let rendered = output(Command::new("kubectl").arg("kustomize").arg(&dir))?;
    let rendered_file = root.join("target/kubernetes-rendered.yaml");
    std::fs::write(&rendered_file, &rendered)?;
    let mut files = vec![rendered_file.clone()];
    for e in std::fs::read_dir(&dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "yaml") {
            files.push(p);
        }
    }
    files.sort();
    for minor in VERSIONS {
        let o = Command::new("python3")
            .args(["-m", "kubernetes_validate", "--strict", "--quiet", "-k"])
            .arg(format!("1.{minor}"))
            .args(&files)
            .output()
            .context("cannot run kubernetes-validate")?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        // Kinds it has no schema for (ServiceMonitor, Kustomization) only warn.
        let failed = text
            .lines()
            .filter(|l| !l.starts_with("WARN ") && !l.trim().is_empty())
            .collect::<Vec<_>>();
        ensure!(
            o.status.success() && failed.is_empty(),
            "the manifests fail Kubernetes 1.{minor}'s schemas:\n{text}"
        );
    }
    println!(
        "manifests: {} files and the rendered folder pass Kubernetes 1.{}-1.{}'s schemas",
        files.len() - 1,
        VERSIONS.start(),
        VERSIONS.end()
    );

    let objects = parse_yaml(&rendered)?;
    let docs = std::fs::read_to_string(root.join("docs/kubernetes.md"))?;
    let problems = semantic_problems(&objects, &docs);
    ensure!(
        problems.is_empty(),
        "the manifests disagree with themselves or the docs:\n{}",
        problems.join("\n")
    );
    println!(
        "manifests: selectors, ports, capabilities and mounts agree with each other and the docs"
    );
    Ok(objects)
}

/// YAML documents read by a real YAML reader (PyYAML, which kubernetes-validate brings),
/// by kind.
fn parse_yaml(text: &str) -> Result<Objects> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump(list(yaml.safe_load_all(sys.stdin)), sys.stdout)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run python3")?;
    child.stdin.take().unwrap().write_all(text.as_bytes())?;
    let mut json = String::new();
    child.stdout.take().unwrap().read_to_string(&mut json)?;
    ensure!(
        child.wait()?.success(),
        "the rendered manifests are not YAML"
    );
    let docs: Vec<Value> = serde_json::from_str(&json)?;
    let mut by_kind = BTreeMap::new();
    for d in docs {
        let kind = d["kind"]
            .as_str()
            .context("a document without a kind")?
            .to_string();
        ensure!(
            by_kind.insert(kind.clone(), d).is_none(),
            "two objects of kind {kind}"
        );
    }
    Ok(by_kind)
}

/// The capabilities docs/kubernetes.md's table lists (its rows begin "| `CAP_").
fn documented_capabilities(docs: &str) -> Vec<String> {
    let mut caps: Vec<String> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("| `CAP_"))
        .filter_map(|l| l.split('`').next().map(str::to_string))
        .collect();
    caps.sort();
    caps
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What no schema checks, each problem a line.
fn semantic_problems(o: &Objects, docs: &str) -> Vec<String> {
    let mut p = Vec::new();
    let (Some(ds), Some(svc)) = (o.get("DaemonSet"), o.get("Service")) else {
        return vec!["no DaemonSet or no Service".into()];
    };
    let template = &ds["spec"]["template"];
    let labels = &template["metadata"]["labels"];
    let subset = |sel: &Value, of: &Value| {
        sel.as_object()
            .is_some_and(|m| !m.is_empty() && m.iter().all(|(k, v)| of.get(k) == Some(v)))
    };
    if !subset(&ds["spec"]["selector"]["matchLabels"], labels) {
        p.push("the DaemonSet's selector does not match its template's labels".into());
    }
    if !subset(&svc["spec"]["selector"], labels) {
        p.push("the Service's selector does not match the pods' labels".into());
    }
    let containers = template["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let [c] = containers.as_slice() else {
        p.push("the DaemonSet has not exactly one container".into());
        return p;
    };
    // The port the arguments serve, the container's port, the Service's and the
    // scrape annotation's must be one.
    let args = strings(&c["args"]);
    let served = args
        .iter()
        .position(|a| a == "--metrics-addr")
        .and_then(|i| args.get(i + 1))
        .and_then(|a| a.rsplit(':').next()?.parse::<u64>().ok());
    let ports = c["ports"].as_array().cloned().unwrap_or_default();
    let container_port = ports.first().and_then(|x| x["containerPort"].as_u64());
    let port_name = ports.first().and_then(|x| x["name"].as_str()).unwrap_or("");
    if served.is_none() || served != container_port {
        p.push(format!(
            "--metrics-addr serves port {served:?}, the container declares {container_port:?}"
        ));
    }
    // Pods and the Service both annotated are scraped twice by the usual relabelling.
    if svc["metadata"]["annotations"]["prometheus.io/scrape"].is_string() {
        p.push(
            "the Service carries prometheus.io/scrape too: every series would be scraped twice"
                .into(),
        );
    }
    let annotated = template["metadata"]["annotations"]["prometheus.io/port"]
        .as_str()
        .and_then(|s| s.parse::<u64>().ok());
    if annotated != container_port {
        p.push(format!(
            "the pods' prometheus.io/port is {annotated:?}, not {container_port:?}"
        ));
    }
    let svc_ports = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
    let target_ok = svc_ports.iter().any(|sp| {
        sp["targetPort"].as_str() == Some(port_name) || sp["targetPort"].as_u64() == container_port
    });
    if !target_ok {
        p.push("no port of the Service targets the container's".into());
    }
    let probe_port = &c["livenessProbe"]["httpGet"]["port"];
    if probe_port.as_str() != Some(port_name) && probe_port.as_u64() != container_port {
        p.push("the liveness probe is not on the metrics port".into());
    }
    if let Some(sm) = o.get("ServiceMonitor") {
        if !subset(
            &sm["spec"]["selector"]["matchLabels"],
            &svc["metadata"]["labels"],
        ) {
            p.push("the ServiceMonitor's selector does not match the Service's labels".into());
        }
        let ns = svc["metadata"]["namespace"].as_str().unwrap_or("");
        if !strings(&sm["spec"]["namespaceSelector"]["matchNames"])
            .iter()
            .any(|n| n == ns)
        {
            p.push("the ServiceMonitor does not look in the Service's namespace".into());
        }
        let names: Vec<&str> = svc_ports
            .iter()
            .filter_map(|sp| sp["name"].as_str())
            .collect();
        for e in sm["spec"]["endpoints"].as_array().into_iter().flatten() {
            if !names.contains(&e["port"].as_str().unwrap_or("")) {
                p.push(format!(
                    "the ServiceMonitor scrapes port {}, which the Service has not",
                    e["port"]
                ));
            }
            // Else the target's own namespace/pod/container labels (syscost's pod's)
            // replace the workloads' names.
            if e["honorLabels"] != Value::Bool(true) {
                p.push(
                    "the ServiceMonitor does not honor the series' own labels (honorLabels: true)"
                        .into(),
                );
            }
        }
    }
    // The privileges: the documented capabilities exactly, every other dropped.
    let sc = &c["securityContext"];
    let mut added = strings(&sc["capabilities"]["add"]);
    added.sort();
    let documented = documented_capabilities(docs);
    if added != documented || documented.is_empty() {
        p.push(format!(
            "the container adds {added:?}, docs/kubernetes.md lists {documented:?}"
        ));
    }
    if strings(&sc["capabilities"]["drop"]) != ["ALL"] {
        p.push("the container does not drop every other capability".into());
    }
    for (field, want) in [
        ("readOnlyRootFilesystem", Value::Bool(true)),
        ("allowPrivilegeEscalation", Value::Bool(false)),
        ("privileged", Value::Bool(false)),
    ] {
        if sc[field] != want {
            p.push(format!("securityContext.{field} is not {want}"));
        }
    }
    if template["spec"]["hostPID"] != Value::Bool(true) {
        p.push("the pods are not in the host's PID namespace".into());
    }
    for m in c["volumeMounts"].as_array().into_iter().flatten() {
        if m["readOnly"] != Value::Bool(true) {
            p.push(format!("{} is mounted writable", m["mountPath"]));
        }
    }
    // The web configuration's secret is the one the kustomization makes.
    let secret = o.get("Secret").and_then(|s| s["metadata"]["name"].as_str());
    let wanted = template["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|v| v["secret"]["secretName"].as_str());
    if secret.is_none() || secret != wanted {
        p.push(format!(
            "the pods mount secret {wanted:?}, the folder makes {secret:?}"
        ));
    }
    p
}

/// A container run by podman, removed when dropped (on a failure too).
struct Container {
    name: String,
    child: Child,
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "-f", "-t", "0", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A cgroup made for the check (and the parents it had to make), removed deepest first
/// when dropped.
struct Cgroups(Vec<PathBuf>);

impl Drop for Cgroups {
    fn drop(&mut self) {
        for dir in self.0.iter().rev() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::fs::remove_dir(dir).is_err() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A process killed and reaped when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `podman run` arguments of the DaemonSet's pod: its privileges and mounts as they
/// are in the manifest; its hostPath volumes from the host (those it may create,
/// `DirectoryOrCreate`, from `stand_in` instead, so that nothing is made on the host),
/// its secret from `secret`.
fn podman_args(
    ds: &Value,
    stand_in: &BTreeMap<String, PathBuf>,
    secret: &Path,
    drop_cap: Option<&str>,
) -> Result<Vec<String>> {
    let spec = &ds["spec"]["template"]["spec"];
    let c = &spec["containers"][0];
    let sc = &c["securityContext"];
    let mut a: Vec<String> = vec![
        "--runtime".into(),
        "/usr/sbin/runc".into(),
        // This machine's hard limits are below podman's defaults.
        "--ulimit".into(),
        "nofile=1024:1024".into(),
        "--ulimit".into(),
        "nproc=1024:1024".into(),
        // A pod's container has a cgroup namespace of its own.
        "--cgroupns".into(),
        "private".into(),
    ];
    if spec["hostPID"] == Value::Bool(true) {
        a.extend(["--pid".into(), "host".into()]);
    }
    if let (Some(u), Some(g)) = (sc["runAsUser"].as_u64(), sc["runAsGroup"].as_u64()) {
        a.extend(["--user".into(), format!("{u}:{g}")]);
    }
    if sc["readOnlyRootFilesystem"] == Value::Bool(true) {
        // Kubernetes gives no writable /tmp, /run or /var/tmp; podman would.
        a.extend(["--read-only".into(), "--read-only-tmpfs=false".into()]);
    }
    if let Some(limit) = c["resources"]["limits"]["memory"].as_str() {
        a.extend(["--memory".into(), podman_memory(limit)?]);
    }
    if sc["allowPrivilegeEscalation"] == Value::Bool(false) {
        a.extend(["--security-opt".into(), "no-new-privileges".into()]);
    }
    if sc["seccompProfile"]["type"].as_str() == Some("Unconfined") {
        a.extend(["--security-opt".into(), "seccomp=unconfined".into()]);
    }
    for d in strings(&sc["capabilities"]["drop"]) {
        a.extend(["--cap-drop".into(), d.to_lowercase()]);
    }
    for cap in strings(&sc["capabilities"]["add"]) {
        if Some(cap.as_str()) != drop_cap {
            a.extend(["--cap-add".into(), cap]);
        }
    }
    for e in c["env"].as_array().into_iter().flatten() {
        let (Some(k), Some(v)) = (e["name"].as_str(), e["value"].as_str()) else {
            bail!("an environment variable without a plain value: {e}");
        };
        a.extend(["--env".into(), format!("{k}={v}")]);
    }
    let volumes: BTreeMap<&str, &Value> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| Some((v["name"].as_str()?, v)))
        .collect();
    for m in c["volumeMounts"].as_array().into_iter().flatten() {
        let name = m["name"].as_str().context("a mount without a name")?;
        let to = m["mountPath"].as_str().context("a mount without a path")?;
        let v = volumes
            .get(name)
            .with_context(|| format!("no volume {name}"))?;
        let from = if let Some(host) = v["hostPath"]["path"].as_str() {
            match stand_in.get(host) {
                Some(p) => p.display().to_string(),
                None if v["hostPath"]["type"].as_str() == Some("DirectoryOrCreate") => {
                    bail!("no stand-in for {host}, which the pod may create")
                }
                None => host.to_string(),
            }
        } else if v.get("secret").is_some() {
            secret.display().to_string()
        } else {
            bail!("volume {name} is neither a hostPath nor a secret");
        };
        let ro = if m["readOnly"] == Value::Bool(true) {
            ":ro"
        } else {
            ""
        };
        a.extend(["--volume".into(), format!("{from}:{to}{ro}")]);
    }
    Ok(a)
}

/// A Kubernetes memory quantity (`256Mi`) as podman takes it (`256m`).
fn podman_memory(q: &str) -> Result<String> {
    let (n, unit) = q.split_at(q.find(|c: char| !c.is_ascii_digit()).unwrap_or(q.len()));
    let unit = match unit {
        "" => "b",
        "Ki" => "k",
        "Mi" => "m",
        "Gi" => "g",
        other => bail!("memory quantity {q}: unit {other} not understood"),
    };
    ensure!(!n.is_empty(), "memory quantity {q} has no number");
    Ok(format!("{n}{unit}"))
}

/// Where cgroup v2 is mounted here.
fn v2_mount() -> Result<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")?;
    info.lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })
        .context("no cgroup v2 mount")
}

fn pod_check(root: &Path, image: &image::Image, o: &Objects) -> Result<()> {
    let ds = o.get("DaemonSet").context("no DaemonSet")?;
    let c = &ds["spec"]["template"]["spec"]["containers"][0];
    let args = strings(&c["args"]);
    let port = c["ports"][0]["containerPort"]
        .as_u64()
        .context("no container port")?;
    let image_ref = c["image"].as_str().context("no image")?;
    ensure!(
        image_ref == image.name,
        "the DaemonSet runs {image_ref}, the image is {}",
        image.name
    );

    let parents_before = podman_parents();
    run_quiet(
        Command::new("podman")
            .arg("load")
            .arg("-i")
            .arg(&image.archive),
    )?;
    let me = std::process::id();
    let scratch = root.join(format!("target/kube-check-{me}"));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let result = pod_check_in(root, ds, &args, port, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    let _ = Command::new("podman")
        .args(["rmi", "-f", &image.name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    // podman's cgroup parents (`libpod_parent` in each hierarchy, `conmon` below it),
    // when the check made them: empty once its containers are gone.
    for dir in podman_parents() {
        if !parents_before.contains(&dir) {
            remove_empty_tree(&dir);
        }
    }
    result
}

/// What a check killed before its guards ran left: its containers (named
/// `syscost-kube-check-PID...`) and its pod's cgroups (uid `PID-0000-4000-8000-...cafe`),
/// for PIDs no longer running.
fn sweep_gone_checks() {
    let gone = |pid: Option<u32>| pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists());
    let names = Command::new("podman")
        .args(["ps", "-a", "--format", "{{.Names}}"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for name in names.lines() {
        let pid = name
            .strip_prefix("syscost-kube-check-")
            .and_then(|r| r.split('-').next()?.parse().ok());
        if gone(pid) {
            let _ = Command::new("podman")
                .args(["rm", "-f", "-t", "0", name])
                .stdout(Stdio::null())
                .status();
        }
    }
    let Ok(mount) = v2_mount() else {
        return;
    };
    let qos = mount.join("kubepods.slice/kubepods-besteffort.slice");
    for e in std::fs::read_dir(&qos).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().replace('_', "-");
        let Some(uid) = name.strip_prefix("kubepods-besteffort-pod") else {
            continue;
        };
        let pid = uid.get(..8).and_then(|h| u32::from_str_radix(h, 16).ok());
        if uid.contains("-0000-4000-8000-00000000cafe") && gone(pid) {
            remove_empty_tree(&e.path());
        }
    }
    // The kubelet's parents, which the check made, where empty and no kubelet runs.
    if !Path::new("/var/lib/kubelet").exists() {
        let _ = std::fs::remove_dir(&qos);
        let _ = std::fs::remove_dir(mount.join("kubepods.slice"));
    }
}

/// The `libpod_parent` cgroups podman makes in each hierarchy.
fn podman_parents() -> Vec<PathBuf> {
    std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("libpod_parent"))
        .chain([PathBuf::from("/sys/fs/cgroup/libpod_parent")])
        .filter(|p| p.is_dir())
        .collect()
}

/// Removes the empty cgroups of a tree, deepest first (a populated one stays).
fn remove_empty_tree(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_tree(&e.path());
        }
    }
    let _ = std::fs::remove_dir(dir);
}

fn pod_check_in(root: &Path, ds: &Value, args: &[String], port: u64, scratch: &Path) -> Result<()> {
    let me = std::process::id();
    // A pod and a container of the check's own, where the kubelet (systemd driver) and
    // containerd put them.
    let uid = format!("{me:08x}-0000-4000-8000-00000000cafe");
    let id = format!("{me:08x}{}", "facade".repeat(10))[..64].to_string();
    let mount = v2_mount()?;
    let segments = [
        "kubepods.slice".to_string(),
        "kubepods-besteffort.slice".to_string(),
        format!("kubepods-besteffort-pod{}.slice", uid.replace('-', "_")),
        format!("cri-containerd-{id}.scope"),
    ];
    let mut cgroups = Cgroups(Vec::new());
    let mut dir = mount.clone();
    for s in &segments {
        dir = dir.join(s);
        if !dir.exists() {
            std::fs::create_dir(&dir).with_context(|| format!("mkdir {}", dir.display()))?;
            cgroups.0.push(dir.clone());
        }
    }
    // containerd's file of the container (names), in a stand-in for its folder.
    let containerd = "/run/containerd/io.containerd.runtime.v2.task/k8s.io";
    let stand_in = scratch.join("containerd");
    std::fs::create_dir_all(stand_in.join(&id))?;
    std::fs::write(
        stand_in.join(&id).join("config.json"),
        r#"{"annotations":{"io.kubernetes.cri.sandbox-namespace":"shop","io.kubernetes.cri.sandbox-name":"cart-7","io.kubernetes.cri.container-name":"app","io.kubernetes.cri.container-type":"container"}}"#,
    )?;
    let secret = scratch.join("secret");
    std::fs::create_dir_all(&secret)?;
    std::fs::copy(
        root.join("deploy/kubernetes/web-config.yml"),
        secret.join("web-config.yml"),
    )?;
    let stand_ins = BTreeMap::from([(containerd.to_string(), stand_in)]);

    // The workload: a host process moved into the container's cgroup, then released to
    // make its calls, then held until the count is read.
    let calls: u64 = 31_337;
    let workload = root.join("target/release/syscost-workload");
    crate::setup::run(crate::setup::cargo(root).args([
        "build",
        "--release",
        "-p",
        "syscost-workload",
    ]))?;

    // The pod, with every privilege the DaemonSet gives; its port published on loopback.
    let name = format!("syscost-kube-check-{me}");
    let host_port = free_port()?;
    let mut cmd = Command::new("podman");
    // A check killed before its guard runs leaves the pod running its programs on
    // every syscall of the machine: podman ends it after 10 minutes whatever happens.
    cmd.args(["run", "--rm", "--name", &name, "--timeout", "600"])
        .args(podman_args(ds, &stand_ins, &secret, None)?)
        .args(["--publish", &format!("127.0.0.1:{host_port}:{port}")])
        .arg(&image_name(ds)?)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("cannot run podman")?;
    let stderr = child.stderr.take().unwrap();
    let pod = Container { name, child };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx
        .recv_timeout(PATIENCE)
        .context("the pod printed nothing within its patience")?;
    ensure!(
        first.contains("serving the syscalls of every process"),
        "the pod did not start serving: {first}"
    );

    let mut work = Command::new(&workload)
        .args(["--wait-stdin", "--hold", "getppid", &calls.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start the workload")?;
    let pid = work.id();
    let mut lines = BufReader::new(work.stdout.take().unwrap()).lines();
    let mut input = work.stdin.take().unwrap();
    let work = Reaped(work);
    let first = lines.next().transpose()?.unwrap_or_default();
    ensure!(first == "ready", "the workload said {first:?}");
    std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
    writeln!(input)?;
    let ready = lines.next().transpose()?.unwrap_or_default();
    ensure!(
        ready.starts_with("ns_per_call="),
        "the workload said {ready:?}"
    );
    let done = lines.next().transpose()?.unwrap_or_default();
    ensure!(done == "done", "the workload said {done:?}");

    let cgroup_path = format!("/{}", segments.join("/"));
    let want = [
        ("pid", pid.to_string()),
        ("syscall", "getppid".to_string()),
        ("cgroup", cgroup_path),
        ("pod_uid", uid.clone()),
        ("container_id", id.clone()),
        ("namespace", "shop".to_string()),
        ("pod", "cart-7".to_string()),
        ("container", "app".to_string()),
    ];
    let pid_s = pid.to_string();
    wait_for_series(
        host_port,
        "syscost_process_syscalls_total",
        ("pid", &pid_s),
        calls,
        &want,
    )
    .with_context(|| format!("{calls} getppid of {pid} with its pod's labels"))?;
    println!(
        "pod: the image with the DaemonSet's privileges counts {calls} getppid of a process in pod {uid}, container {}..., exactly, with its names",
        &id[..12]
    );

    // A process that makes its calls and exits at once, in another container of the
    // pod: gone before any sample, its cgroup named by the kernel's id.
    let id2 = format!("{me:08x}{}", "decade".repeat(10))[..64].to_string();
    let dir2 = dir
        .parent()
        .unwrap()
        .join(format!("cri-containerd-{id2}.scope"));
    std::fs::create_dir(&dir2)?;
    cgroups.0.push(dir2.clone());
    let short_calls: u64 = 20_000;
    let status = in_cgroup(
        Command::new(&workload).args(["getppid", &short_calls.to_string()]),
        &dir2,
    )?
    .stdout(Stdio::null())
    .status()?;
    ensure!(status.success(), "the short process failed: {status}");
    let path2 = format!("/{}/cri-containerd-{id2}.scope", segments[..3].join("/"));
    let want2 = [
        ("cgroup", path2.clone()),
        ("syscall", "getppid".to_string()),
        ("pod_uid", uid.clone()),
        ("container_id", id2.clone()),
    ];
    wait_for_series(
        host_port,
        "syscost_cgroup_syscalls_total",
        ("cgroup", &path2),
        short_calls,
        &want2,
    )
    .with_context(|| format!("{short_calls} getppid of an exited process in {path2}"))?;
    println!(
        "pod: a process gone at once counts {short_calls} getppid under its container {}...'s cgroup, with the pod's labels",
        &id2[..12]
    );

    // doctor says where it names cgroups from, and --cgroup takes the host's path.
    let (status, out, err) = pod_run(ds, &stand_ins, &secret, &["doctor"])?;
    let line = out
        .lines()
        .find(|l| l.contains("cgroup v2:"))
        .unwrap_or_default()
        .to_string();
    ensure!(
        line.starts_with("ok ") && line.contains("hierarchy mounted at /host/sys/fs/cgroup"),
        "doctor in the pod ({status}) said of cgroups: {line:?}\n{out}{err}"
    );
    println!("pod: doctor: {line}");
    let pod_slice = format!("/{}", segments[..3].join("/"));
    let (status, out, err) = pod_run(
        ds,
        &stand_ins,
        &secret,
        &["attach", "--cgroup", &pod_slice, "--no-tui", "-d", "1"],
    )?;
    ensure!(
        status.success(),
        "attach --cgroup {pod_slice} in the pod failed ({status}):\n{out}{err}"
    );
    println!("pod: attach --cgroup {pod_slice} (the host's path) runs");
    drop(input);
    drop(work);
    drop(pod);

    // One capability fewer: syscost's one line, an exit status, no crash.
    for cap in strings(
        &ds["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["add"],
    ) {
        let name = format!("syscost-kube-check-{me}-{}", cap.to_lowercase());
        let mut cmd = Command::new("podman");
        cmd.args(["run", "--rm", "--name", &name])
            .args(podman_args(ds, &stand_ins, &secret, Some(&cap))?)
            .arg(image_name(ds)?)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn()?;
        let mut c = Container { name, child };
        let (status, err) = wait_output(&mut c.child, PATIENCE)?;
        let lines: Vec<&str> = err.lines().collect();
        // The container's message: what to add to the pod, not sudo.
        ensure!(
            status.code() == Some(1)
                && lines.len() == 1
                && lines[0].starts_with("syscost: syscost needs CAP_BPF and CAP_PERFMON")
                && lines[0].contains(
                    "add them to the container (Kubernetes: securityContext.capabilities.add: [BPF, PERFMON]"
                ),
            "without {cap} the pod ended with {status} and said:\n{err}"
        );
        println!("pod: without {cap}: {}", lines[0]);
    }
    drop(cgroups);
    Ok(())
}

/// `cmd`, which moves itself into cgroup `dir` before its program starts (so that every
/// call of the program is made there).
fn in_cgroup<'a>(cmd: &'a mut Command, dir: &Path) -> Result<&'a mut Command> {
    use std::os::unix::{ffi::OsStrExt as _, process::CommandExt as _};
    let procs = std::ffi::CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())?;
    // SAFETY: open, write and close are async-signal-safe; the path was made before the
    // fork.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // "0": the writing process itself.
            let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            if wrote != 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// One command of the image, run to its end with the DaemonSet's privileges: its
/// status, standard output and error.
fn pod_run(
    ds: &Value,
    stand_ins: &BTreeMap<String, PathBuf>,
    secret: &Path,
    args: &[&str],
) -> Result<(std::process::ExitStatus, String, String)> {
    let name = format!("syscost-kube-check-{}-run", std::process::id());
    let child = Command::new("podman")
        .args(["run", "--rm", "--name", &name])
        .args(podman_args(ds, stand_ins, secret, None)?)
        .arg(image_name(ds)?)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut c = Container { name, child };
    let mut out = c.child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let (status, err) = wait_output(&mut c.child, PATIENCE)?;
    Ok((status, reader.join().unwrap_or_default(), err))
}

fn image_name(ds: &Value) -> Result<String> {
    ds["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .map(str::to_string)
        .context("no image")
}

/// Waits for `child` to end (killed after `patience`); its status and standard error.
fn wait_output(
    child: &mut Child,
    patience: Duration,
) -> Result<(std::process::ExitStatus, String)> {
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + patience;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!("the pod did not end within {patience:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok((status, reader.join().unwrap_or_default()))
}

fn run_quiet(cmd: &mut Command) -> Result<()> {
    let o = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    ensure!(
        o.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Ok(())
}

/// A loopback port free now.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// One scrape of /metrics on a loopback port.
fn scrape(port: u16) -> Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    Ok(text)
}

/// Scrapes the endpoint on loopback `port` until the `family` series whose `key` label
/// has the given value, for getppid, counts exactly `calls`, then checks it carries every
/// label of `want`; fails after [`PATIENCE`] with the last such line seen.
fn wait_for_series(
    port: u16,
    family: &str,
    key: (&str, &str),
    calls: u64,
    want: &[(&str, String)],
) -> Result<()> {
    let deadline = Instant::now() + PATIENCE;
    let mut last = String::new();
    loop {
        let text = scrape(port).unwrap_or_else(|e| e.to_string());
        let found = text.lines().find(|l| {
            l.strip_prefix(family).is_some_and(|r| r.starts_with('{'))
                && label(l, key.0) == Some(key.1)
                && label(l, "syscall") == Some("getppid")
        });
        if let Some(line) = found {
            last = line.to_string();
            let value = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
            if value == Some(calls as f64) {
                for (k, v) in want {
                    ensure!(
                        label(line, k) == Some(v.as_str()),
                        "{k} is not {v} in the pod's series: {line}"
                    );
                }
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            // What the family holds for getppid otherwise (labelled another way?).
            let others: Vec<&str> = text
                .lines()
                .filter(|l| {
                    l.strip_prefix(family).is_some_and(|r| r.starts_with('{'))
                        && label(l, "syscall") == Some("getppid")
                })
                .take(8)
                .collect();
            bail!(
                "the pod's endpoint never counted them within {PATIENCE:?}; last: {last}; the family's getppid series: {others:#?}"
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A label's value in an exposition line (values here hold no quotes).
fn label<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let inner = line.split_once('{')?.1.rsplit_once('}')?.0;
    inner.split("\",").find_map(|kv| {
        kv.strip_prefix(name)?
            .strip_prefix("=\"")
            .map(|v| v.trim_end_matches('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_found_whole() {
        let line = r#"x{ppid="3",pid="12",comm="a",syscall="getppid"} 5"#;
        assert_eq!(label(line, "pid"), Some("12"));
        assert_eq!(label(line, "syscall"), Some("getppid"));
        assert_eq!(label(line, "cgroup"), None);
    }

    #[test]
    fn capabilities_are_read_from_the_docs_table() {
        let docs = "| what | why |\n|---|---|\n| `CAP_PERFMON` | attach |\n| `CAP_BPF` | load |\n";
        assert_eq!(documented_capabilities(docs), ["BPF", "PERFMON"]);
    }
}
