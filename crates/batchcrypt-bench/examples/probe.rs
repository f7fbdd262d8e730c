use batchcrypt::aes::{cpu, gcm::Gcm, Key};
use batchcrypt::{Backend, BackendChoice, Engine};
use openssl::cipher::{Cipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;
use rayon::prelude::*;
use std::time::Instant;

fn gcm(c: &CipherRef, key: &[u8], iv: &[u8], a: &[u8], b: &mut [u8]) {
    let mut x = CipherCtx::new().unwrap();
    x.encrypt_init(Some(c), Some(key), Some(iv)).unwrap();
    x.cipher_update(a, Some(b)).unwrap();
    x.cipher_final(&mut []).unwrap();
    let mut t = [0u8; 16];
    x.tag(&mut t).unwrap();
}
fn ctr(c: &CipherRef, key: &[u8], iv: &[u8], a: &[u8], b: &mut [u8]) {
    let mut x = CipherCtx::new().unwrap();
    x.encrypt_init(Some(c), Some(key), Some(iv)).unwrap();
    x.cipher_update(a, Some(b)).unwrap();
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse::<usize>().unwrap() << 10)
        .unwrap_or(1 << 20);
    let data = vec![5u8; n];
    let mut out = vec![0u8; n];
    let key = [1u8; 16];
    let k = Key::new(&key).unwrap();
    let g = Gcm::new(&k, &[3u8; 12]).unwrap();
    let auto = Engine::with_backend(BackendChoice::Auto);
    let forced = Engine::with_backend(BackendChoice::Exact(Backend::OpenSsl));
    let mut names: Vec<String> = vec![];
    let mut fs: Vec<Box<dyn FnMut(&mut [u8])>> = vec![];
    for p in [4usize, 8, 16, 32] {
        let piece = n / p;
        let d = &data;
        names.push(format!("peer gcm {p} pieces"));
        fs.push(Box::new(move |o: &mut [u8]| {
            d.par_chunks(piece)
                .zip(o.par_chunks_mut(piece))
                .for_each(|(a, b)| gcm(Cipher::aes_128_gcm(), &key, &[3u8; 12], a, b))
        }));
        names.push(format!("peer ctr {p} pieces"));
        fs.push(Box::new(move |o: &mut [u8]| {
            d.par_chunks(piece)
                .zip(o.par_chunks_mut(piece))
                .for_each(|(a, b)| ctr(Cipher::aes_128_ctr(), &key, &[3u8; 16], a, b))
        }));
    }
    for t in [4usize, 8, 16, 32] {
        let (d, g, k) = (&data, &g, &k);
        names.push(format!("ours gcm ossl threads {t}"));
        fs.push(Box::new(move |o: &mut [u8]| {
            cpu::gcm(Backend::OpenSsl, g, d, o, false, t).unwrap();
        }));
        names.push(format!("ours ctr ossl threads {t}"));
        fs.push(Box::new(move |o: &mut [u8]| {
            cpu::ctr(Backend::OpenSsl, k, &[3u8; 16], d, o, t).unwrap()
        }));
        names.push(format!("ours ctr rc threads {t}"));
        fs.push(Box::new(move |o: &mut [u8]| {
            cpu::ctr(Backend::Portable, k, &[3u8; 16], d, o, t).unwrap()
        }));
    }
    let (d, k) = (&data, &k);
    let (a1, f1) = (&auto, &forced);
    names.push("engine auto gcm".into());
    fs.push(Box::new(move |o: &mut [u8]| {
        a1.aes().gcm_encrypt(k, &[3u8; 12], &[], d, o).unwrap();
    }));
    names.push("engine auto ctr".into());
    fs.push(Box::new(move |o: &mut [u8]| {
        a1.aes().ctr(k, &[3u8; 16], d, o).unwrap();
    }));
    names.push("engine openssl gcm".into());
    fs.push(Box::new(move |o: &mut [u8]| {
        f1.aes().gcm_encrypt(k, &[3u8; 12], &[], d, o).unwrap();
    }));
    names.push("engine openssl ctr".into());
    fs.push(Box::new(move |o: &mut [u8]| {
        f1.aes().ctr(k, &[3u8; 16], d, o).unwrap();
    }));
    names.push("h inverse".into());
    let h = g.h;
    fs.push(Box::new(move |_o: &mut [u8]| {
        std::hint::black_box(std::hint::black_box(h).inv());
    }));
    let mut times = vec![vec![]; fs.len()];
    for f in fs.iter_mut() {
        f(&mut out);
    }
    for r in 0..400 {
        for j in 0..fs.len() {
            let i = (r + j) % fs.len();
            let t = Instant::now();
            fs[i](&mut out);
            times[i].push(t.elapsed().as_secs_f64());
        }
    }
    let o = auto
        .aes()
        .gcm_encrypt(k, &[3u8; 12], &[], d, &mut out)
        .unwrap();
    println!("auto gcm: {:?} threads {}", o.backend, o.threads);
    let o = auto.aes().ctr(k, &[3u8; 16], d, &mut out).unwrap();
    println!("auto ctr: {:?} threads {}", o.backend, o.threads);
    for (nm, mut v) in names.into_iter().zip(times) {
        v.sort_by(f64::total_cmp);
        let m = v[v.len() / 2];
        println!(
            "{nm:28} median {:8.1} us  p10 {:8.1} us  {:6.2} GB/s",
            m * 1e6,
            v[v.len() / 10] * 1e6,
            n as f64 / m / 1e9
        );
    }
}
