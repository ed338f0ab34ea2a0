//! The reconcilers: read the custom resource, apply what the builders return with server-side
//! apply (one field manager), write the status through the status subresource, publish Events.
//! The controllers watch the custom resources untyped and [`decode`] them one at a time.

pub mod benchmark;
pub mod decode;
pub mod pods;
pub mod store;
pub mod summary;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::labels::FIELD_MANAGER;
use crate::Error;

/// Server-side applies `obj` (which must carry its name) with the operator's field manager.
pub async fn apply<K>(api: &Api<K>, obj: &K) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let name = obj.meta().name.clone().ok_or(Error::MissingField("metadata.name"))?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    Ok(api.patch(&name, &params, &Patch::Apply(obj)).await?)
}

/// Server-side applies `status` to the status subresource of `name`.
pub async fn apply_status<K>(api: &Api<K>, name: &str, status: serde_json::Value) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch_status(name, &params, &Patch::Apply(&body)).await?;
    Ok(())
}
