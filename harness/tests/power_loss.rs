//! A simulated power cut (SIGKILL, then the append-only file cut back to its
//! last fsync): with appendfsync always every acknowledged write survives;
//! with everysec the last acknowledged writes are gone — on every server of
//! the matrix (Redis 6.2 keeps one `appendonly.aof`, 7.0 and Valkey a
//! directory of parts).

use harness::server::{DataDir, ManagedServer, ServerKind, ServerOptions};

async fn server(appendfsync: &str) -> ManagedServer {
    on(None, appendfsync).await
}

async fn on(kind: Option<ServerKind>, appendfsync: &str) -> ManagedServer {
    let mut options = ServerOptions::default()
        .with_virtual_clock(false)
        .with_data_dir(DataDir::Disk)
        .with_fsync_tracking(true)
        .with_config("appendfsync", appendfsync);
    if let Some(kind) = kind {
        options = options.with_server(kind);
    }
    ManagedServer::start(options).await.unwrap()
}

async fn write_and_cut(s: &mut ManagedServer, n: usize) -> (u64, usize) {
    let mut conn = s.admin().await.unwrap();
    for i in 0..n {
        let _: () = redis::cmd("SET")
            .arg(format!("k{i}"))
            .arg("v")
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    drop(conn);
    let dropped = s.power_loss().unwrap();
    s.restart().await.unwrap();
    let mut conn = s.admin().await.unwrap();
    let kept: usize = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap();
    (dropped, kept)
}

#[tokio::test(flavor = "multi_thread")]
async fn appendfsync_always_keeps_every_acknowledged_write_through_a_power_cut() {
    let mut s = server("always").await;
    let (dropped, kept) = write_and_cut(&mut s, 300).await;
    assert_eq!(dropped, 0);
    assert_eq!(kept, 300);
}

/// A power cut of an everysec server of `kind`: (bytes dropped, keys kept
/// of 300). Its fsync runs once a second in the background, so a cut that
/// comes right after one has nothing to lose (seen under load): up to five
/// servers are cut, and the first loss is returned.
async fn everysec_cut(kind: Option<ServerKind>) -> (u64, usize) {
    let mut last = (0, 0);
    for _ in 0..5 {
        let mut s = on(kind.clone(), "everysec").await;
        last = write_and_cut(&mut s, 300).await;
        let _ = s.stop().await;
        if last.0 > 0 && last.1 < 300 {
            break;
        }
    }
    last
}

#[tokio::test(flavor = "multi_thread")]
async fn appendfsync_everysec_loses_acknowledged_writes_in_a_power_cut() {
    let (dropped, kept) = everysec_cut(None).await;
    eprintln!("dropped {dropped} bytes, kept {kept} of 300 keys");
    assert!(dropped > 0);
    assert!(kept < 300);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_power_cut_needs_fsync_tracking() {
    let mut s = ManagedServer::start(ServerOptions::default().with_virtual_clock(false))
        .await
        .unwrap();
    assert!(s.power_loss().is_err());
}

/// Redis 6.2's single append-only file is cut too (it was not, and every
/// power-loss check held vacuously there), and Valkey's parts are.
#[tokio::test(flavor = "multi_thread")]
async fn every_server_of_the_matrix_keeps_with_always_and_loses_with_everysec() {
    for kind in [ServerKind::Redis62, ServerKind::Valkey9] {
        let mut s = on(Some(kind.clone()), "always").await;
        let (dropped, kept) = write_and_cut(&mut s, 300).await;
        assert_eq!((dropped, kept), (0, 300), "{kind}, always");
        let _ = s.stop().await;
        let (dropped, kept) = everysec_cut(Some(kind.clone())).await;
        eprintln!("{kind}: dropped {dropped} bytes, kept {kept} of 300 keys");
        assert!(
            dropped > 0 && kept < 300,
            "{kind}, everysec: {dropped} {kept}"
        );
    }
}
