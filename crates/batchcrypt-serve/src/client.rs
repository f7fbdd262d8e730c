//! The Rust client of a running `batchcrypt serve`: typed calls over the generated gRPC client
//! (available whole through [`Client::raw`]).

use crate::proto::batch_crypt_client::BatchCryptClient;
use crate::proto::*;
use batchcrypt::secp256k1::SigFormat;
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::Status;

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Auth(Option<MetadataValue<Ascii>>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(t) = &self.0 {
            r.metadata_mut().insert("authorization", t.clone());
        }
        Ok(r)
    }
}

pub type Raw = BatchCryptClient<InterceptedService<Channel, Auth>>;

/// How to reach a server.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub token: Option<String>,
    /// PEM certificate of the authority that signed the server's (TLS); None: plain HTTP/2.
    pub tls_ca: Option<Vec<u8>>,
    /// Largest message either way.
    pub max_message_bytes: Option<usize>,
}

#[derive(Clone)]
pub struct Client {
    raw: Raw,
    channel: Channel,
}

/// A verdict: Ok, or why the item is not valid.
pub type Verdict = Result<(), String>;

fn verdicts(r: VerifyReply) -> Vec<Verdict> {
    r.valid
        .into_iter()
        .zip(r.reason)
        .map(|(ok, why)| if ok { Ok(()) } else { Err(why) })
        .collect()
}

fn format(f: SigFormat) -> i32 {
    match f {
        SigFormat::Der => SignatureFormat::Der as i32,
        SigFormat::Compact => SignatureFormat::Compact as i32,
    }
}

impl Client {
    /// Connects to `address` (`host:port`, or a URI).
    pub async fn connect(address: &str) -> Result<Client, String> {
        Self::connect_with(address, Options::default()).await
    }

    pub async fn connect_with(address: &str, options: Options) -> Result<Client, String> {
        let tls = options.tls_ca.is_some();
        let uri = if address.contains("://") {
            address.to_string()
        } else {
            format!("{}://{address}", if tls { "https" } else { "http" })
        };
        let mut endpoint = Endpoint::from_shared(uri.clone())
            .map_err(|e| format!("{uri}: {e}"))?
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true);
        if let Some(ca) = options.tls_ca {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca)))
                .map_err(|e| format!("TLS: {e}"))?;
        }
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| format!("cannot connect to {uri}: {e} (is `batchcrypt serve` running there?)"))?;
        let token = match options.token {
            Some(t) => Some(
                format!("Bearer {t}")
                    .parse()
                    .map_err(|_| "the token must be printable ASCII".to_string())?,
            ),
            None => None,
        };
        let max = options.max_message_bytes.unwrap_or(64 << 20);
        let raw = BatchCryptClient::with_interceptor(channel.clone(), Auth(token))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max);
        Ok(Client { raw, channel })
    }

    /// The generated client, for calls without a typed wrapper here.
    pub fn raw(&mut self) -> &mut Raw {
        &mut self.raw
    }

    /// Whether the server reports itself serving (the standard health check).
    pub async fn ready(&self) -> Result<bool, Status> {
        use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
        let r = HealthClient::new(self.channel.clone())
            .check(HealthCheckRequest {
                service: "batchcrypt.v1.BatchCrypt".into(),
            })
            .await?;
        Ok(r.into_inner().status == tonic_health::pb::health_check_response::ServingStatus::Serving as i32)
    }

    pub async fn verify_ecdsa(
        &mut self,
        hashes: &[[u8; 32]],
        sigs: &[&[u8]],
        keys: &[&[u8]],
        sig_format: SigFormat,
        require_low_s: bool,
    ) -> Result<Vec<Verdict>, Status> {
        let r = self
            .raw
            .verify_ecdsa(VerifyEcdsaRequest {
                hashes: hashes.iter().map(|h| h.to_vec()).collect(),
                signatures: sigs.iter().map(|s| s.to_vec()).collect(),
                public_keys: keys.iter().map(|k| k.to_vec()).collect(),
                format: format(sig_format),
                require_low_s,
            })
            .await?;
        Ok(verdicts(r.into_inner()))
    }

    pub async fn verify_schnorr(
        &mut self,
        msgs: &[&[u8]],
        sigs: &[[u8; 64]],
        keys: &[[u8; 32]],
    ) -> Result<Vec<Verdict>, Status> {
        let r = self
            .raw
            .verify_schnorr(VerifySchnorrRequest {
                messages: msgs.iter().map(|m| m.to_vec()).collect(),
                signatures: sigs.iter().map(|s| s.to_vec()).collect(),
                public_keys: keys.iter().map(|k| k.to_vec()).collect(),
            })
            .await?;
        Ok(verdicts(r.into_inner()))
    }

    pub async fn verify_sm2(
        &mut self,
        msgs: &[&[u8]],
        sigs: &[&[u8]],
        keys: &[&[u8]],
        id: &[u8],
        sig_format: SigFormat,
    ) -> Result<Vec<Verdict>, Status> {
        let r = self
            .raw
            .verify_sm2(VerifySm2Request {
                messages: msgs.iter().map(|m| m.to_vec()).collect(),
                signatures: sigs.iter().map(|s| s.to_vec()).collect(),
                public_keys: keys.iter().map(|k| k.to_vec()).collect(),
                format: format(sig_format),
                id: Some(id.to_vec()),
            })
            .await?;
        Ok(verdicts(r.into_inner()))
    }

    pub async fn hash(&mut self, algorithm: HashAlgorithm, msgs: &[&[u8]]) -> Result<Vec<[u8; 32]>, Status> {
        let r = self
            .raw
            .hash(HashRequest {
                algorithm: algorithm as i32,
                messages: msgs.iter().map(|m| m.to_vec()).collect(),
                ..Default::default()
            })
            .await?
            .into_inner();
        r.digests
            .iter()
            .map(|d| d.as_slice().try_into())
            .collect::<Result<_, _>>()
            .map_err(|_| Status::internal("a digest is not 32 bytes"))
    }

    /// Digests of messages of `len` bytes each, back to back in `packed` (the fast form for many
    /// short messages): 32 bytes per message, back to back.
    pub async fn hash_packed(&mut self, algorithm: HashAlgorithm, packed: Vec<u8>, len: usize) -> Result<Vec<u8>, Status> {
        let r = self
            .raw
            .hash(HashRequest {
                algorithm: algorithm as i32,
                messages: Vec::new(),
                packed: packed.into(),
                message_len: len as u32,
            })
            .await?
            .into_inner();
        Ok(r.packed_digests)
    }

    /// Registers a circuit by its .zkey's bytes.
    pub async fn register(&mut self, zkey: Vec<u8>, name: &str) -> Result<RegisterCircuitReply, Status> {
        Ok(self
            .raw
            .register_circuit(RegisterCircuitRequest {
                zkey,
                zkey_path: String::new(),
                name: name.into(),
            })
            .await?
            .into_inner())
    }

    /// Queues a proof; `request_id` makes a resubmission find the same job.
    pub async fn submit(
        &mut self,
        circuit_id: &str,
        witness: Vec<u8>,
        request_id: &str,
        priority: i32,
    ) -> Result<Job, Status> {
        Ok(self
            .raw
            .submit_proof(SubmitProofRequest {
                circuit_id: circuit_id.into(),
                witness,
                request_id: request_id.into(),
                priority,
                deadline_unix_ms: 0,
            })
            .await?
            .into_inner())
    }

    pub async fn wait(&mut self, job_id: &str, cancel_if_abandoned: bool) -> Result<ProofReply, Status> {
        Ok(self
            .raw
            .wait_proof(WaitProofRequest {
                job_id: job_id.into(),
                cancel_if_abandoned,
            })
            .await?
            .into_inner())
    }

    pub async fn job(&mut self, job_id: &str) -> Result<Job, Status> {
        Ok(self.raw.get_job(JobRef { job_id: job_id.into() }).await?.into_inner())
    }

    /// A proof, end to end: submitted under a fresh request id and waited for; across a restart
    /// of the server (UNAVAILABLE) it resubmits under the same id, so the job runs once.
    pub async fn prove(&mut self, circuit_id: &str, witness: Vec<u8>, priority: i32) -> Result<ProofReply, Status> {
        let request_id = hex::encode(rand::random::<[u8; 16]>());
        let mut retries = 0;
        loop {
            let attempt = async {
                let job = self.submit(circuit_id, witness.clone(), &request_id, priority).await?;
                self.wait(&job.job_id, true).await
            };
            match attempt.await {
                Err(s) if s.code() == tonic::Code::Unavailable && retries < 60 => {
                    retries += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                other => return other,
            }
        }
    }
}
