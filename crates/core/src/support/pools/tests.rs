use super::*;

#[test]
fn the_biggest_waiting_job_comes_first_and_equal_ones_in_order() {
    let mut heap = BinaryHeap::new();
    for (i, work) in [1u64, 5, 3, 5, 0].into_iter().enumerate() {
        let mut job = Waiting::new(work, || {});
        job.seq = std::cmp::Reverse(i as u64);
        heap.push(job);
    }
    let order: Vec<_> = std::iter::from_fn(|| heap.pop())
        .map(|w| (w.work, w.seq.0))
        .collect();
    assert_eq!(order, [(5, 1), (5, 3), (3, 2), (1, 0), (0, 4)]);
}

#[test]
fn jobs_run_on_the_extraction_pool() {
    let (tx, rx) = std::sync::mpsc::channel();
    for work in [3u64, 1, 2] {
        let tx = tx.clone();
        spawn_extraction(work, move || {
            let name = std::thread::current().name().map(str::to_string);
            tx.send((work, name)).unwrap();
        });
    }
    let mut done: Vec<_> = (0..3).map(|_| rx.recv().unwrap()).collect();
    done.sort();
    assert_eq!(done.iter().map(|d| d.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(done
        .iter()
        .all(|d| d.1.as_deref().unwrap().starts_with("cas-extract-")));
}
