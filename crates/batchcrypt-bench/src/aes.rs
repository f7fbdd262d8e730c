//! Bulk AES-128 CTR and GCM, 1 MiB to 4 GiB: OpenSSL on one core (one call over the buffer) and
//! on all cores (CTR: the buffer cut into one piece per thread at the matching counter; GCM: one
//! independent message per thread, the most OpenSSL can do in parallel), our CPU backends, our
//! GPU kernel on data in GPU memory, our GPU call on data in GPU memory, and our GPU call from
//! host memory (copies both ways included). Outputs are checked equal. The pinned host↔device
//! bandwidth is measured in the same run, for the end-to-end fraction.

use crate::report::{has_gpu, label, time, time_interleaved, with_gpu_and_auto, Report};
use batchcrypt::aes::Key;
use batchcrypt::{Backend, BackendChoice, Engine};
use openssl::cipher::Cipher;
use openssl::cipher_ctx::CipherCtx;
use rayon::prelude::*;

const GROUP: &str = "aes";

fn openssl_ctr(key: &Key, iv: &[u8; 16], input: &[u8], output: &mut [u8]) {
    let mut c = CipherCtx::new().unwrap();
    c.encrypt_init(Some(Cipher::aes_128_ctr()), Some(key.bytes()), Some(iv))
        .unwrap();
    update(&mut c, input, output);
}

/// One context over the whole buffer, in calls of at most 1 GiB (OpenSSL takes an int length).
fn update(c: &mut CipherCtx, input: &[u8], output: &mut [u8]) {
    for (a, b) in input.chunks(1 << 30).zip(output.chunks_mut(1 << 30)) {
        c.cipher_update(a, Some(b)).unwrap();
    }
}

fn openssl_gcm(key: &Key, iv: &[u8], input: &[u8], output: &mut [u8]) -> [u8; 16] {
    let mut c = CipherCtx::new().unwrap();
    c.encrypt_init(Some(Cipher::aes_128_gcm()), Some(key.bytes()), Some(iv))
        .unwrap();
    update(&mut c, input, output);
    c.cipher_final(&mut []).unwrap();
    let mut tag = [0u8; 16];
    c.tag(&mut tag).unwrap();
    tag
}

/// OpenSSL on all cores: one piece per thread, CTR at the piece's counter, GCM as independent
/// messages (the most OpenSSL can do in parallel).
fn openssl_pieces(
    mode: &str,
    key: &Key,
    iv: &[u8; 16],
    input: &[u8],
    output: &mut [u8],
    piece: usize,
) {
    input
        .par_chunks(piece)
        .zip(output.par_chunks_mut(piece))
        .enumerate()
        .for_each(|(i, (a, b))| match mode {
            "ctr" => openssl_ctr(
                key,
                &batchcrypt::aes::gcm::add128(iv, (i * piece / 16) as u64),
                a,
                b,
            ),
            _ => drop(openssl_gcm(key, &[i as u8; 12], a, b)),
        })
}

/// `n` bytes of a fixed pseudo-random pattern, made on all cores.
fn pattern(n: usize) -> Vec<u8> {
    (0..n)
        .into_par_iter()
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
        .collect()
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let sizes: &[usize] = if quick {
        &[1 << 20, 16 << 20]
    } else {
        &[1 << 20, 16 << 20, 256 << 20, 1 << 30, 4 << 30]
    };
    let key = Key::new(&[0x42; 16])?;
    let iv = [7u8; 16];
    let nonce = [9u8; 12];
    let threads = batchcrypt::backend::cpu::threads();
    if has_gpu() {
        let gpu = batchcrypt::backend::cuda::Gpu::available()?;
        let pinned = batchcrypt::pipeline::measure_link_pinned(gpu)?;
        let pageable = batchcrypt::pipeline::measure_link(gpu)?;
        let staged = batchcrypt::pipeline::measure_link_staged(gpu)?;
        println!(
            "\nhost↔device copy bandwidth (32 MiB): pinned {:.1} GB/s up, {:.1} GB/s down, {:.1} GB/s each way at once; pageable {:.1} up, {:.1} down; pageable through staging (128 MiB) {:.1} up, {:.1} down, {:.1} each way at once",
            pinned.h2d / 1e9,
            pinned.d2h / 1e9,
            pinned.duplex / 1e9,
            pageable.h2d / 1e9,
            pageable.d2h / 1e9,
            staged.h2d / 1e9,
            staged.d2h / 1e9,
            staged.duplex / 1e9
        );
        rep.add(
            GROUP,
            "link",
            "pinned host to device",
            1,
            32 << 20,
            (32 << 20) as f64 / pinned.h2d,
            None,
        );
        rep.add(
            GROUP,
            "link",
            "pinned device to host",
            1,
            32 << 20,
            (32 << 20) as f64 / pinned.d2h,
            None,
        );
        // An encryption moves its bytes both ways at once: the ceiling of the overlapped pipeline.
        rep.add(
            GROUP,
            "link",
            "pinned both ways at once, each way",
            1,
            32 << 20,
            (32 << 20) as f64 / pinned.duplex,
            None,
        );
    }
    rep.header("AES-128 CTR and GCM over one buffer: ours vs OpenSSL (same key, IV and data; outputs checked equal)");
    let biggest = *sizes.iter().max().unwrap();
    let data = pattern(biggest);
    let mut want = vec![0u8; biggest];
    let mut out = vec![0u8; biggest];
    for &n in sizes {
        // Small calls take tens of microseconds, where thread wake-ups vary by as much: many
        // rounds, the rows timed in turns.
        let (reps, turns) = match n {
            n if n <= 1 << 20 => (5, 300),
            n if n <= 16 << 20 => (5, 40),
            n if n <= 256 << 20 => (5, 5),
            // Two turns at 4 GiB left the same backend 15% apart between two rows.
            _ => (2, 4),
        };
        let blocks = n.div_ceil(16) as u64;
        let input = &data[..n];
        for mode in ["ctr", "gcm"] {
            let case = format!("{mode} {} MiB", n >> 20);
            // OpenSSL, one call over the buffer on one core.
            let mut want_tag = [0u8; 16];
            let t = time(reps, || match mode {
                "ctr" => openssl_ctr(&key, &iv, input, &mut want[..n]),
                _ => want_tag = openssl_gcm(&key, &nonce, input, &mut want[..n]),
            });
            rep.add(GROUP, &case, "openssl 1 core", blocks, n as u64, t, None);
            // In turns: OpenSSL on all cores (one piece per thread), then ours with each backend
            // forced and the dispatcher's choice.
            let piece = n.div_ceil(threads).next_multiple_of(16);
            let shared = std::cell::RefCell::new(&mut out[..n]);
            let mut peer =
                || openssl_pieces(mode, &key, &iv, input, &mut shared.borrow_mut(), piece);
            let choices = with_gpu_and_auto(
                vec![
                    (
                        "ours cpu (openssl backend)",
                        BackendChoice::Exact(Backend::OpenSsl),
                    ),
                    (
                        "ours cpu (rustcrypto backend)",
                        BackendChoice::Exact(Backend::Portable),
                    ),
                ],
                "ours gpu from host memory",
            );
            let engines: Vec<Engine> = choices.iter().map(|c| Engine::with_backend(c.1)).collect();
            let ran: Vec<std::cell::Cell<Option<Backend>>> =
                choices.iter().map(|_| Default::default()).collect();
            let mut ours: Vec<Box<dyn FnMut() + '_>> = engines
                .iter()
                .zip(&ran)
                .map(|(engine, ran)| {
                    let (shared, key, iv, nonce) = (&shared, &key, &iv, &nonce);
                    Box::new(move || {
                        let out = &mut **shared.borrow_mut();
                        let r = match mode {
                            "ctr" => engine.aes().ctr(key, iv, input, out).map(|o| o.backend),
                            _ => engine
                                .aes()
                                .gcm_encrypt(key, nonce, &[], input, out)
                                .map(|o| o.backend),
                        };
                        ran.set(Some(r.expect("AES call failed")));
                    }) as Box<dyn FnMut()>
                })
                .collect();
            // The GPU row is timed on its own: a CPU row right after it would find the pool's
            // threads asleep (they park while the GPU works), which is not what it costs alone.
            let on_gpu = |c: &BackendChoice| *c == BackendChoice::Exact(Backend::Cuda);
            let mut fs: Vec<&mut dyn FnMut()> = vec![&mut peer];
            let mut alone = Vec::new();
            for (f, c) in ours.iter_mut().zip(&choices) {
                match on_gpu(&c.1) {
                    true => alone.push(f),
                    false => fs.push(&mut **f as &mut dyn FnMut()),
                }
            }
            let turned = time_interleaved(turns, &mut fs);
            drop(fs);
            let mut by_itself = alone.into_iter().map(|f| time(reps, f));
            let mut in_turns = turned[1..].iter().copied();
            let t: Vec<f64> = std::iter::once(turned[0])
                .chain(choices.iter().map(|c| match on_gpu(&c.1) {
                    true => by_itself.next().unwrap(),
                    false => in_turns.next().unwrap(),
                }))
                .collect();
            drop(ours);
            rep.add(
                GROUP,
                &case,
                "openssl all cores",
                blocks,
                n as u64,
                t[0],
                Some("openssl 1 core"),
            );
            for (i, (name, choice)) in choices.iter().enumerate() {
                // Each implementation's output is checked on its own run.
                let backend = ran[i].get().unwrap();
                let mut tag = [0u8; 16];
                let o = match mode {
                    "ctr" => engines[i]
                        .aes()
                        .ctr(&key, &iv, input, &mut out[..n])
                        .map(|_| ()),
                    _ => engines[i]
                        .aes()
                        .gcm_encrypt(&key, &nonce, &[], input, &mut out[..n])
                        .map(|o| tag = o.value),
                };
                o.map_err(|e| anyhow::anyhow!("{name} on {case}: {e}"))?;
                anyhow::ensure!(
                    out[..n] == want[..n] && (mode == "ctr" || tag == want_tag),
                    "{name} disagrees with OpenSSL on {case}"
                );
                let name = label(name, *choice, backend);
                rep.add(
                    GROUP,
                    &case,
                    &name,
                    blocks,
                    n as u64,
                    t[i + 1],
                    Some("openssl all cores"),
                );
            }
            if mode == "ctr" {
                openssl_pieces(mode, &key, &iv, input, &mut out[..n], piece);
                anyhow::ensure!(
                    out[..n] == want[..n],
                    "OpenSSL pieces disagree with one OpenSSL call"
                );
            }
            if has_gpu() {
                gpu_resident(
                    rep,
                    &case,
                    mode,
                    &key,
                    &iv,
                    &nonce,
                    input,
                    &want[..n],
                    want_tag,
                    reps,
                )?;
            }
        }
    }
    Ok(())
}

/// `f(input, output)` on page-locked copies of `input` and an output buffer of its length.
fn with_pinned(
    gpu: &batchcrypt::backend::cuda::Gpu,
    input: &[u8],
    f: impl FnOnce(&[u8], &mut [u8]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let n = input.len();
    // SAFETY: the input buffer is written here, the output before it is read.
    let (mut pin_in, mut pin_out) = unsafe {
        (
            gpu.context().alloc_pinned::<u8>(n.max(1))?,
            gpu.context().alloc_pinned::<u8>(n.max(1))?,
        )
    };
    pin_in.as_mut_slice()?[..n].copy_from_slice(input);
    f(&pin_in.as_slice()?[..n], &mut pin_out.as_mut_slice()?[..n])
}

/// Rows for data already in GPU memory: the kernel alone (event-timed) and our device call.
fn gpu_resident(
    rep: &mut Report,
    case: &str,
    mode: &str,
    key: &Key,
    iv: &[u8; 16],
    nonce: &[u8],
    input: &[u8],
    want: &[u8],
    want_tag: [u8; 16],
    reps: usize,
) -> anyhow::Result<()> {
    let n = input.len();
    let blocks = n.div_ceil(16) as u64;
    let t = batchcrypt::aes::gpu::kernel_seconds(key, mode == "gcm", n, reps.max(5))?;
    rep.add(
        GROUP,
        case,
        "ours gpu kernel (data in GPU memory)",
        blocks,
        n as u64,
        t,
        Some("openssl all cores"),
    );
    if mode == "ctr" {
        // The same work through the bitsliced kernel, kept to compare the two AES designs.
        let (got, t) = batchcrypt::aes::gpu::bitsliced_ctr(key, iv, input, reps.max(5))?;
        anyhow::ensure!(
            got[..] == want[..],
            "bitsliced GPU kernel disagrees with OpenSSL on {case}"
        );
        rep.add(
            GROUP,
            case,
            "ours gpu bitsliced kernel (data in GPU memory)",
            blocks,
            n as u64,
            t,
            Some("openssl all cores"),
        );
    }
    let gpu = batchcrypt::backend::cuda::Gpu::available()?;
    let stream = gpu.stream()?;
    let engine = Engine::with_backend(BackendChoice::Gpu);
    let fresh = || stream.clone_htod(input);
    // Each run encrypts a fresh copy in place; the copy is not timed.
    let mut times = Vec::new();
    let mut check = None;
    for i in 0..reps + 1 {
        let mut d = fresh()?;
        stream.synchronize()?;
        let t0 = std::time::Instant::now();
        let tag = match mode {
            "ctr" => engine
                .aes()
                .ctr_device(key, iv, &mut d)
                .map(|_| [0u8; 16])?,
            _ => engine.aes().gcm_encrypt_device(key, nonce, &[], &mut d)?,
        };
        if i > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
        check = Some((stream.clone_dtoh(&d)?, tag));
    }
    let (got, tag) = check.unwrap();
    anyhow::ensure!(
        got[..] == want[..] && (mode == "ctr" || tag == want_tag),
        "GPU device call disagrees with OpenSSL on {case}"
    );
    times.sort_by(f64::total_cmp);
    rep.add(
        GROUP,
        case,
        "ours gpu call (data in GPU memory)",
        blocks,
        n as u64,
        times[times.len() / 2],
        Some("openssl all cores"),
    );
    // From page-locked host memory to page-locked host memory: the copy engines read and write the
    // buffers directly. Compared with the pinned upload bandwidth measured above.
    // Timed in turns with plain copies of the same bytes between the same buffers (upload alone;
    // upload and download at once): the host's copy rates drift by tens of percent within a run,
    // so the fraction is taken against copies measured alongside.
    with_pinned(gpu, input, |pin_in, pin_out| {
        let up_stream = gpu.stream()?;
        let down_stream = gpu.context().new_stream()?;
        // SAFETY: both are written (upload, or the copy below) before anything reads them.
        let dev_up = std::cell::RefCell::new(unsafe { up_stream.alloc::<u8>(n) }?);
        let mut dev_down = unsafe { down_stream.alloc::<u8>(n) }?;
        down_stream.memcpy_htod(pin_in, &mut dev_down)?;
        down_stream.synchronize()?;
        let pin_out = std::cell::RefCell::new(pin_out);
        let tag = std::cell::Cell::new([0u8; 16]);
        let mut ours = || {
            let out = &mut **pin_out.borrow_mut();
            tag.set(
                match mode {
                    "ctr" => engine.aes().ctr(key, iv, pin_in, out).map(|_| [0u8; 16]),
                    _ => engine
                        .aes()
                        .gcm_encrypt(key, nonce, &[], pin_in, out)
                        .map(|o| o.value),
                }
                .expect("AES call failed"),
            )
        };
        let mut up = || {
            up_stream
                .memcpy_htod(pin_in, &mut *dev_up.borrow_mut())
                .unwrap();
            up_stream.synchronize().unwrap();
        };
        let mut both = || {
            up_stream
                .memcpy_htod(pin_in, &mut *dev_up.borrow_mut())
                .unwrap();
            down_stream
                .memcpy_dtoh(&dev_down, &mut **pin_out.borrow_mut())
                .unwrap();
            up_stream.synchronize().unwrap();
            down_stream.synchronize().unwrap();
        };
        let t = time_interleaved(reps.max(3), &mut [&mut ours, &mut up, &mut both]);
        ours();
        anyhow::ensure!(
            pin_out.borrow()[..] == want[..] && (mode == "ctr" || tag.get() == want_tag),
            "GPU from pinned memory disagrees with OpenSSL on {case}"
        );
        let pin_out = pin_out.into_inner();
        rep.add(
            GROUP,
            case,
            "ours gpu from pinned host memory",
            blocks,
            n as u64,
            t[0],
            Some("openssl all cores"),
        );
        rep.add(
            GROUP,
            case,
            "pinned upload alone (same bytes, in turns)",
            blocks,
            n as u64,
            t[1],
            None,
        );
        rep.add(
            GROUP,
            case,
            "pinned upload and download at once (same bytes, in turns)",
            blocks,
            n as u64,
            t[2],
            None,
        );
        println!(
            "{case}: from pinned host memory at {:.0}% of the upload alone, {:.0}% of upload and download at once (both timed in turns with it)",
            100.0 * t[1] / t[0],
            100.0 * t[2] / t[0]
        );
        let auto = Engine::with_backend(BackendChoice::Auto);
        let r = match mode {
            "ctr" => auto
                .aes()
                .ctr(key, iv, pin_in, pin_out)
                .map(|o| o.backend)?,
            _ => auto
                .aes()
                .gcm_encrypt(key, nonce, &[], pin_in, pin_out)
                .map(|o| o.backend)?,
        };
        println!("{case}: from pinned host memory the dispatcher picks {r}");
        Ok(())
    })
}

const XTS_GROUP: &str = "xts";
/// The data unit of the XTS rows: a 4 KiB sector, as file systems and disks use.
const SECTOR: usize = 4096;

/// OpenSSL's XTS over whole sectors from `first` on, one context re-initialised per sector (each
/// update call is one data unit in OpenSSL's XTS).
fn openssl_xts(key: &[u8], first: u64, input: &[u8], output: &mut [u8]) {
    let mut c = CipherCtx::new().unwrap();
    c.encrypt_init(Some(Cipher::aes_128_xts()), Some(key), None)
        .unwrap();
    for (j, (a, b)) in input
        .chunks(SECTOR)
        .zip(output.chunks_mut(SECTOR))
        .enumerate()
    {
        let tweak = u128::from(first + j as u64).to_le_bytes();
        c.encrypt_init(None, None, Some(&tweak)).unwrap();
        c.cipher_update(a, Some(b)).unwrap();
    }
}

/// XTS-AES-128 over 4 KiB sectors, 1 MiB to 1 GiB: OpenSSL on one core and on all cores (its
/// EVP interface directly, sectors split across threads) against our CPU backends, our GPU
/// (kernels on data in GPU memory, encryption and decryption; the device call; from pageable and
/// from page-locked host memory) and auto, on the same key, sectors and data; outputs checked
/// equal.
pub fn run_xts(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use batchcrypt::aes::xts::XtsKey;
    let sizes: &[usize] = if quick {
        &[1 << 20, 16 << 20]
    } else {
        &[1 << 20, 16 << 20, 256 << 20, 1 << 30]
    };
    let raw: Vec<u8> = (0..32u8).collect();
    let key = XtsKey::new(&raw)?;
    let threads = batchcrypt::backend::cpu::threads();
    rep.header("XTS-AES-128, 4 KiB sectors: ours vs OpenSSL (same key, sectors and data; outputs checked equal)");
    let biggest = *sizes.iter().max().unwrap();
    let data = pattern(biggest);
    let mut want = vec![0u8; biggest];
    let mut out = vec![0u8; biggest];
    for &n in sizes {
        let reps = if n <= 256 << 20 { 5 } else { 2 };
        let (input, blocks) = (&data[..n], (n / 16) as u64);
        let case = format!("xts {} MiB", n >> 20);
        let t = time(reps, || openssl_xts(&raw, 0, input, &mut want[..n]));
        rep.add(
            XTS_GROUP,
            &case,
            "openssl 1 core",
            blocks,
            n as u64,
            t,
            None,
        );
        let piece = n.div_ceil(threads).next_multiple_of(SECTOR);
        let t = time(reps, || {
            input
                .par_chunks(piece)
                .zip(out[..n].par_chunks_mut(piece))
                .enumerate()
                .for_each(|(i, (a, b))| openssl_xts(&raw, (i * piece / SECTOR) as u64, a, b))
        });
        anyhow::ensure!(
            out[..n] == want[..n],
            "OpenSSL on all cores disagrees on {case}"
        );
        rep.add(
            XTS_GROUP,
            &case,
            "openssl all cores",
            blocks,
            n as u64,
            t,
            Some("openssl 1 core"),
        );
        let choices = with_gpu_and_auto(
            vec![
                (
                    "ours openssl backend",
                    BackendChoice::Exact(Backend::OpenSsl),
                ),
                (
                    "ours portable backend",
                    BackendChoice::Exact(Backend::Portable),
                ),
            ],
            "ours gpu from host memory",
        );
        for (name, choice) in choices {
            let e = Engine::with_backend(choice);
            out[..n].fill(0);
            let mut ran = None;
            let t = time(reps, || {
                ran = Some(
                    e.aes()
                        .xts_encrypt(&key, &[0; 16], SECTOR, input, &mut out[..n])
                        .unwrap()
                        .backend,
                );
            });
            anyhow::ensure!(
                out[..n] == want[..n],
                "{name} disagrees with OpenSSL on {case}"
            );
            let name = label(name, choice, ran.unwrap());
            rep.add(
                XTS_GROUP,
                &case,
                &name,
                blocks,
                n as u64,
                t,
                Some("openssl all cores"),
            );
        }
        if has_gpu() {
            xts_gpu_resident(rep, &case, &key, input, &want[..n], reps)?;
        }
    }
    Ok(())
}

/// XTS rows for data in GPU memory (kernels alone, event-timed, both directions; the device
/// call) and from page-locked host memory.
fn xts_gpu_resident(
    rep: &mut Report,
    case: &str,
    key: &batchcrypt::aes::xts::XtsKey,
    input: &[u8],
    want: &[u8],
    reps: usize,
) -> anyhow::Result<()> {
    let n = input.len();
    let blocks = (n / 16) as u64;
    for (decrypt, name) in [
        (false, "ours gpu kernel (data in GPU memory)"),
        (true, "ours gpu kernel, decryption (data in GPU memory)"),
    ] {
        let t = batchcrypt::aes::gpu::xts_kernel_seconds(key, n, decrypt, reps.max(5))?;
        rep.add(
            XTS_GROUP,
            case,
            name,
            blocks,
            n as u64,
            t,
            Some("openssl all cores"),
        );
    }
    let gpu = batchcrypt::backend::cuda::Gpu::available()?;
    let stream = gpu.stream()?;
    let engine = Engine::with_backend(BackendChoice::Gpu);
    let mut times = Vec::new();
    let mut got = Vec::new();
    for i in 0..reps + 1 {
        let mut d = stream.clone_htod(input)?;
        stream.synchronize()?;
        let t0 = std::time::Instant::now();
        engine
            .aes()
            .xts_encrypt_device(key, &[0; 16], SECTOR, &mut d)?;
        if i > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
        got = stream.clone_dtoh(&d)?;
    }
    anyhow::ensure!(
        got == want,
        "GPU device call disagrees with OpenSSL on {case}"
    );
    times.sort_by(f64::total_cmp);
    rep.add(
        XTS_GROUP,
        case,
        "ours gpu call (data in GPU memory)",
        blocks,
        n as u64,
        times[times.len() / 2],
        Some("openssl all cores"),
    );
    with_pinned(gpu, input, |pin_in, pin_out| {
        let t = time(reps, || {
            engine
                .aes()
                .xts_encrypt(key, &[0; 16], SECTOR, pin_in, pin_out)
                .expect("XTS call failed");
        });
        anyhow::ensure!(
            pin_out[..] == want[..],
            "GPU from pinned memory disagrees on {case}"
        );
        rep.add(
            XTS_GROUP,
            case,
            "ours gpu from pinned host memory",
            blocks,
            n as u64,
            t,
            Some("openssl all cores"),
        );
        Ok(())
    })
}

const BATCH_GROUP: &str = "aes-batch";

/// OpenSSL over the messages of a fixed-length batch, each under its own key and IV (GCM: the
/// first 12 bytes as nonce, the tag computed): one context, its cipher set once and re-keyed per
/// message (setting the cipher per message costs OpenSSL 3 an algorithm fetch under a lock).
fn openssl_messages(
    gcm: bool,
    keys: &[Key],
    ivs: &[[u8; 16]],
    len: usize,
    input: &[u8],
    output: &mut [u8],
) {
    let mut c = CipherCtx::new().unwrap();
    let cipher = if gcm {
        Cipher::aes_128_gcm()
    } else {
        Cipher::aes_128_ctr()
    };
    c.encrypt_init(Some(cipher), None, None).unwrap();
    for (i, (a, b)) in input.chunks(len).zip(output.chunks_mut(len)).enumerate() {
        let iv = if gcm { &ivs[i][..12] } else { &ivs[i][..] };
        c.encrypt_init(None, Some(keys[i].bytes()), Some(iv))
            .unwrap();
        c.cipher_update(a, Some(b)).unwrap();
        if gcm {
            c.cipher_final(&mut []).unwrap();
            let mut tag = [0u8; 16];
            c.tag(&mut tag).unwrap();
            std::hint::black_box(tag);
        }
    }
}

/// OpenSSL's XTS-AES-128 over messages, each one data unit under its own key and tweak (the
/// cipher set once, re-keyed per message).
fn openssl_xts_messages(
    keys: &[Vec<u8>],
    tweaks: &[[u8; 16]],
    len: usize,
    input: &[u8],
    output: &mut [u8],
) {
    let mut c = CipherCtx::new().unwrap();
    c.encrypt_init(Some(Cipher::aes_128_xts()), None, None)
        .unwrap();
    for (i, (a, b)) in input.chunks(len).zip(output.chunks_mut(len)).enumerate() {
        c.encrypt_init(None, Some(&keys[i]), Some(&tweaks[i]))
            .unwrap();
        c.cipher_update(a, Some(b)).unwrap();
    }
}

/// XTS batches: 512-byte and 4 KiB sectors, each under its own XTS-AES-128 key pair and tweak:
/// OpenSSL on one core and on all cores, our backends, auto, and the GPU end to end and kernel
/// only; outputs checked equal.
/// The rows of one batch case over `data` (messages of `len` bytes): OpenSSL on one core (a
/// slice) and on all cores through `peer(first message, input, output)`, then through
/// `ours(engine, output)` (returning the backend that ran) our two CPU backends, auto and the
/// GPU end to end, each output checked against the peer's, and the GPU kernel alone (`kernel`,
/// seconds) where there is a GPU.
fn batch_rows(
    rep: &mut Report,
    case: &str,
    len: usize,
    data: &[u8],
    peer: impl Fn(usize, &[u8], &mut [u8]) + Sync,
    ours: impl Fn(&Engine, &mut [u8]) -> Backend,
    kernel: impl FnOnce() -> batchcrypt::Result<f64>,
) -> anyhow::Result<()> {
    let n = data.len() / len;
    let mut want = vec![0u8; data.len()];
    let mut out = vec![0u8; data.len()];
    let single = (n / 16).max(1);
    let t = time(3, || {
        peer(0, &data[..single * len], &mut want[..single * len])
    });
    rep.add(
        BATCH_GROUP,
        case,
        "openssl 1 core",
        single as u64,
        (single * len) as u64,
        t,
        None,
    );
    let per = n.div_ceil(batchcrypt::backend::cpu::threads());
    let t = time(3, || {
        data.par_chunks(per * len)
            .zip(want.par_chunks_mut(per * len))
            .enumerate()
            .for_each(|(j, (a, b))| peer(j * per, a, b))
    });
    rep.add(
        BATCH_GROUP,
        case,
        "openssl all cores",
        n as u64,
        data.len() as u64,
        t,
        Some("openssl 1 core"),
    );
    let mut choices = vec![
        (
            "ours openssl backend",
            BackendChoice::Exact(Backend::OpenSsl),
        ),
        (
            "ours portable backend",
            BackendChoice::Exact(Backend::Portable),
        ),
        ("ours auto", BackendChoice::Auto),
    ];
    if has_gpu() {
        choices.push((
            "ours cuda (end to end)",
            BackendChoice::Exact(Backend::Cuda),
        ));
    }
    for (name, choice) in choices {
        let e = Engine::with_backend(choice);
        let mut ran = None;
        let t = time(3, || ran = Some(ours(&e, &mut out)));
        anyhow::ensure!(out == want, "{name} disagrees with OpenSSL on {case}");
        let name = label(name, choice, ran.unwrap());
        rep.add(
            BATCH_GROUP,
            case,
            &name,
            n as u64,
            data.len() as u64,
            t,
            Some("openssl all cores"),
        );
    }
    if has_gpu() {
        rep.add(
            BATCH_GROUP,
            case,
            "ours cuda (kernel only)",
            n as u64,
            data.len() as u64,
            kernel()?,
            Some("openssl all cores"),
        );
    }
    Ok(())
}

fn run_xts_batch(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use batchcrypt::aes::xts::XtsKey;
    use batchcrypt::messages::Messages;
    let cases: &[(usize, usize)] = if quick {
        &[(1 << 12, 512), (1 << 10, 4096)]
    } else {
        &[(1 << 18, 512), (1 << 16, 4096)]
    };
    for &(n, len) in cases {
        let case = format!("xts {n} x {len} B");
        let data: Vec<u8> = (0..n * len).map(|i| (i * 131 % 251) as u8).collect();
        let raw: Vec<Vec<u8>> = (0..n)
            .map(|i| batchcrypt::sha256::digest(&(i as u64).to_le_bytes()).to_vec())
            .collect();
        let keys: Vec<XtsKey> = raw.iter().map(|k| XtsKey::new(k).unwrap()).collect();
        let tweaks: Vec<[u8; 16]> = (0..n).map(|i| (i as u128).to_le_bytes()).collect();
        let msgs = Messages::fixed(&data, len)?;
        batch_rows(
            rep,
            &case,
            len,
            &data,
            |first, a, b| openssl_xts_messages(&raw[first..], &tweaks[first..], len, a, b),
            |e, out| {
                e.aes()
                    .xts_encrypt_batch(&keys, &tweaks, &msgs, out)
                    .unwrap()
                    .backend
            },
            || batchcrypt::aes::gpu::xts_batch_kernel_seconds(&keys, &tweaks, &msgs, 5),
        )?;
    }
    Ok(())
}

/// Batches of independent messages, each under its own AES-128 key and IV: 2^20 of 64 bytes and
/// 2^16 of 1 KiB, CTR and GCM. OpenSSL re-keying one context per message on one core (a slice)
/// and on all cores, against our batch call on each CPU backend and auto; outputs checked equal.
pub fn run_batch(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use batchcrypt::messages::Messages;
    let cases: &[(usize, usize)] = if quick {
        &[(64, 1 << 14), (1024, 1 << 12)]
    } else {
        &[(64, 1 << 20), (64, 1 << 22), (1024, 1 << 16)]
    };
    rep.header("AES-128 batches of independent messages, one key and IV each: ours vs OpenSSL (outputs checked equal)");
    for &(len, n) in cases {
        let data = pattern(len * n);
        let keys: Vec<Key> = (0..n)
            .map(|i| {
                Key::Aes128(
                    batchcrypt::sha256::digest(&(i as u64).to_le_bytes())[..16]
                        .try_into()
                        .unwrap(),
                )
            })
            .collect();
        let ivs: Vec<[u8; 16]> = (0..n)
            .map(|i| {
                batchcrypt::sha256::digest(&((i as u64 + 1) << 40).to_le_bytes())[..16]
                    .try_into()
                    .unwrap()
            })
            .collect();
        let nonces: Vec<[u8; 12]> = ivs.iter().map(|iv| iv[..12].try_into().unwrap()).collect();
        let msgs = Messages::fixed(&data, len)?;
        for gcm in [false, true] {
            let case = format!("{} {n} x {len} B", if gcm { "gcm" } else { "ctr" });
            batch_rows(
                rep,
                &case,
                len,
                &data,
                |first, a, b| openssl_messages(gcm, &keys[first..], &ivs[first..], len, a, b),
                |e, out| match gcm {
                    true => {
                        e.aes()
                            .gcm_encrypt_batch(&keys, &nonces, &[], &msgs, out)
                            .unwrap()
                            .backend
                    }
                    false => e.aes().ctr_batch(&keys, &ivs, &msgs, out).unwrap().backend,
                },
                || batchcrypt::aes::gpu::batch_kernel_seconds(gcm, &keys, &ivs, &msgs, 5),
            )?;
        }
    }
    run_xts_batch(rep, quick)
}
