//! `barrage k8s SCRIPT --parallelism N`: Kubernetes manifests that run a test as N segments —
//! a ConfigMap with the compiled plan (self-contained: data files are loaded into it) and the
//! script, and an Indexed Job whose pod `i` runs `barrage run --segment i/N --start-at T`
//! and leaves its results file on a shared volume for `barrage merge`. Built from typed
//! Kubernetes objects (`k8s-openapi`), written as JSON (which `kubectl apply -f` reads).

use crate::usage::usage;
use anyhow::Context;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EnvVar, EnvVarSource, ObjectFieldSelector,
    PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, ResourceRequirements, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A ConfigMap holds at most 1 MiB.
const CONFIG_MAP_LIMIT: usize = 1 << 20;
/// An Indexed Job runs at most this many completions in parallel.
const MAX_PARALLELISM: u32 = 100_000;

#[derive(Debug, clap::Args)]
pub struct K8sArgs {
    /// The definition: a .js script or a .json plan
    file: PathBuf,
    /// Segments (pods) to split the test into
    #[arg(long)]
    parallelism: u32,
    /// Container image with barrage (see Containerfile)
    #[arg(long, default_value = "barrage:latest")]
    image: String,
    /// Namespace of the objects (default: kubectl's current one)
    #[arg(long)]
    namespace: Option<String>,
    /// Directory to write the manifests to
    #[arg(short = 'o', long = "output", value_name = "DIR", default_value = ".")]
    output: PathBuf,
    /// When the segments start (RFC 3339 or Unix seconds; default: 5 minutes from now)
    #[arg(long, value_name = "TIME")]
    start_at: Option<String>,
    /// PersistentVolumeClaim (ReadWriteMany) the pods write their results files to
    #[arg(long, default_value = "barrage-results", value_name = "NAME")]
    results_claim: String,
    /// CPU each pod asks for (e.g. 2)
    #[arg(long, default_value = "1")]
    cpu: String,
}

/// A Kubernetes object name from the test's name (lowercase alphanumerics and dashes).
fn object_name(test: &str) -> String {
    let mut name: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    name = name.trim_matches('-').to_string();
    name.truncate(40);
    let name = name.trim_end_matches('-');
    if name.is_empty() {
        "barrage".into()
    } else {
        format!("barrage-{name}")
    }
}

/// The manifests: a ConfigMap and an Indexed Job.
pub struct Manifests {
    pub config_map: ConfigMap,
    pub job: Job,
}

fn manifests(
    args: &K8sArgs,
    plan_json: String,
    script: Option<String>,
    name: &str,
    start_at_unix: u64,
) -> Manifests {
    let n = args.parallelism;
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_string()),
        namespace: args.namespace.clone(),
        labels: Some(BTreeMap::from([(
            "app.kubernetes.io/name".to_string(),
            "barrage".to_string(),
        )])),
        ..ObjectMeta::default()
    };
    let mut data = BTreeMap::from([("plan.json".to_string(), plan_json)]);
    if let Some(script) = script {
        data.insert("script.js".to_string(), script);
    }
    let config_map = ConfigMap {
        metadata: meta(name),
        data: Some(data),
        ..ConfigMap::default()
    };
    let args_list = [
        "run",
        "/etc/barrage/plan.json",
        "--segment",
        &format!("$(JOB_COMPLETION_INDEX)/{n}"),
        "--start-at",
        &start_at_unix.to_string(),
        "--results",
        "/results/segment-$(JOB_COMPLETION_INDEX).brr",
        "--no-history",
    ]
    .map(str::to_string)
    .to_vec();
    let container = Container {
        name: "barrage".into(),
        image: Some(args.image.clone()),
        args: Some(args_list),
        env: Some(vec![
            // Declared so that `$(JOB_COMPLETION_INDEX)` in the args expands (Kubernetes
            // expands references to the container's declared variables).
            EnvVar {
                name: "JOB_COMPLETION_INDEX".into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path:
                            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                                .into(),
                        ..ObjectFieldSelector::default()
                    }),
                    ..EnvVarSource::default()
                }),
                ..EnvVar::default()
            },
            EnvVar {
                name: "BARRAGE_RESULTS_DIR".into(),
                value: Some("/results".into()),
                ..EnvVar::default()
            },
        ]),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([(
                "cpu".to_string(),
                Quantity(args.cpu.clone()),
            )])),
            ..ResourceRequirements::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "definition".into(),
                mount_path: "/etc/barrage".into(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "results".into(),
                mount_path: "/results".into(),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    };
    let job = Job {
        metadata: meta(name),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n as i32),
            parallelism: Some(n as i32),
            // A retried segment would start late and double-count: a failed pod fails the test.
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(meta(name)),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    containers: vec![container],
                    volumes: Some(vec![
                        Volume {
                            name: "definition".into(),
                            config_map: Some(ConfigMapVolumeSource {
                                name: name.to_string(),
                                ..ConfigMapVolumeSource::default()
                            }),
                            ..Volume::default()
                        },
                        Volume {
                            name: "results".into(),
                            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                                claim_name: args.results_claim.clone(),
                                read_only: Some(false),
                            }),
                            ..Volume::default()
                        },
                    ]),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    Manifests { config_map, job }
}

/// Writes `NAME-configmap.json` and `NAME-job.json` into the output directory.
pub fn k8s_command(
    args: &K8sArgs,
    overrides: &crate::overrides::Overrides,
) -> anyhow::Result<String> {
    if args.parallelism == 0 || args.parallelism > MAX_PARALLELISM {
        return Err(usage(format!(
            "--parallelism: must be between 1 and {MAX_PARALLELISM}, got {}",
            args.parallelism
        )));
    }
    let plan = crate::scenario::prepare(&args.file, overrides)?;
    let plan_json = serde_json::to_string_pretty(&plan)?;
    let script = (args.file.extension().and_then(|e| e.to_str()) == Some("js"))
        .then(|| std::fs::read_to_string(&args.file))
        .transpose()
        .with_context(|| format!("reading {}", args.file.display()))?;
    let size = plan_json.len() + script.as_ref().map_or(0, String::len);
    if size > CONFIG_MAP_LIMIT {
        return Err(usage(format!(
            "{}: the plan with its data is {size} bytes, more than a ConfigMap holds (1 MiB)",
            args.file.display()
        )));
    }
    let start_at = match &args.start_at {
        Some(text) => crate::segment_run::parse_start_at(text)?,
        None => SystemTime::now() + Duration::from_secs(300),
    };
    let start_unix = start_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = object_name(&plan.name);
    let m = manifests(args, plan_json, script, &name, start_unix);
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let config_map = args.output.join(format!("{name}-configmap.json"));
    let job = args.output.join(format!("{name}-job.json"));
    write_json(&config_map, &m.config_map)?;
    write_json(&job, &m.job)?;
    Ok(format!(
        "wrote {} and {}: {} segments starting at Unix time {start_unix} (apply before then; \
         results go to the PersistentVolumeClaim `{}`)\n",
        config_map.display(),
        job.display(),
        args.parallelism,
        args.results_claim
    ))
}

fn write_json<T: serde::Serialize>(file: &Path, value: &T) -> anyhow::Result<()> {
    std::fs::write(file, serde_json::to_string_pretty(value)? + "\n")
        .with_context(|| format!("writing {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;

    /// Deserialises `json` as `T`, failing on any field `T` does not know (a typo'd or
    /// misplaced field would be silently dropped by the API server).
    fn strict<T: DeserializeOwned>(json: &str) -> T {
        let mut unknown = Vec::new();
        let de = &mut serde_json::Deserializer::from_str(json);
        let value: T = serde_ignored::deserialize(de, |path| unknown.push(path.to_string()))
            .expect("deserialises");
        assert!(unknown.is_empty(), "unknown fields: {unknown:?}");
        value
    }

    fn args(parallelism: u32) -> K8sArgs {
        K8sArgs {
            file: "t.js".into(),
            parallelism,
            image: "registry.example/barrage:1".into(),
            namespace: Some("load".into()),
            output: ".".into(),
            start_at: None,
            results_claim: "shared".into(),
            cpu: "2".into(),
        }
    }

    #[test]
    fn the_job_is_indexed_and_each_pod_runs_its_segment() {
        let m = manifests(
            &args(8),
            "{}".into(),
            Some("// s".into()),
            "barrage-t",
            1_800_000_000,
        );
        let job: Job = strict(&serde_json::to_string(&m.job).unwrap());
        let config_map: ConfigMap = strict(&serde_json::to_string(&m.config_map).unwrap());
        assert_eq!(job.metadata.namespace.as_deref(), Some("load"));
        let spec = job.spec.unwrap();
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((spec.completions, spec.parallelism), (Some(8), Some(8)));
        let pod = spec.template.spec.unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        let container = &pod.containers[0];
        assert_eq!(
            container.image.as_deref(),
            Some("registry.example/barrage:1")
        );
        let argv = container.args.clone().unwrap().join(" ");
        assert_eq!(
            argv,
            "run /etc/barrage/plan.json --segment $(JOB_COMPLETION_INDEX)/8 --start-at 1800000000 \
             --results /results/segment-$(JOB_COMPLETION_INDEX).brr --no-history"
        );
        let env = container.env.clone().unwrap();
        assert_eq!(
            env[0].name, "JOB_COMPLETION_INDEX",
            "declared before the args use it"
        );
        let volumes = pod.volumes.unwrap();
        assert_eq!(
            volumes[0].config_map.as_ref().unwrap().name,
            "barrage-t",
            "the pods mount the ConfigMap"
        );
        assert_eq!(
            volumes[1]
                .persistent_volume_claim
                .as_ref()
                .unwrap()
                .claim_name,
            "shared"
        );
        let data = config_map.data.unwrap();
        assert_eq!(data["plan.json"], "{}");
        assert_eq!(data["script.js"], "// s");
    }

    #[test]
    fn names_are_valid_object_names() {
        assert_eq!(object_name("Heartbeat test_1"), "barrage-heartbeat-test-1");
        assert_eq!(object_name("***"), "barrage");
        assert!(object_name(&"x".repeat(100)).len() <= 48);
    }

    #[test]
    #[should_panic(expected = "unknown fields")]
    fn strict_reading_catches_unknown_fields() {
        let _: Job = strict(
            r#"{"apiVersion":"batch/v1","kind":"Job","spec":{"template":{},"completionsMode":"Indexed"}}"#,
        );
    }
}
