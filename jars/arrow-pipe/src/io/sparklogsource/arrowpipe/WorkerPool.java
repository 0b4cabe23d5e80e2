package io.sparklogsource.arrowpipe;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The idle Python workers of this JVM (an executor), reused by its tasks as pyspark reuses its own: a worker is
 * given back only after it answered a whole task with {@code ok}; any other end destroys it. A worker idle for
 * {@link #IDLE_TIMEOUT_NANOS} is destroyed (a reaper looks every {@link #REAP_EVERY_SECONDS} seconds), as pyspark
 * ends its own idle workers after a minute, so an executor that stopped reading logs does not keep the processes
 * and their memory; the rest end with the JVM (their stdin closes, and they exit).
 */
public final class WorkerPool {

  /** Idle workers kept per interpreter and module (one per core at least); more are destroyed when given back. */
  private static final int MAX_IDLE = Math.max(8, Runtime.getRuntime().availableProcessors());

  /** How long a worker may wait in the pool: a minute, pyspark's own timeout for its idle workers. */
  public static final long IDLE_TIMEOUT_NANOS = TimeUnit.MINUTES.toNanos(1);
  /** How often the reaper looks: a worker ends between one minute and this much more after its last task. */
  public static final long REAP_EVERY_SECONDS = 10;
  private static final Logger LOG = LoggerFactory.getLogger(WorkerPool.class);

  private static final Map<String, Deque<PipeWorker>> IDLE = new HashMap<>();
  private static final AtomicLong STARTED = new AtomicLong();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(WorkerPool::destroyIdle, "spark-logsource-pipe-workers"));
    ScheduledExecutorService reaper = Executors.newSingleThreadScheduledExecutor(task -> {
      Thread thread = new Thread(task, "spark-logsource-pipe-reaper");
      thread.setDaemon(true);
      thread.setContextClassLoader(null);  // not the task's that loaded this class
      return thread;
    });
    reaper.scheduleWithFixedDelay(() -> {
      try {
        reap(IDLE_TIMEOUT_NANOS);
      } catch (Throwable e) {  // one failure must not cancel every later round
        LOG.warn("ending idle Python workers failed", e);
      }
    }, REAP_EVERY_SECONDS, REAP_EVERY_SECONDS, TimeUnit.SECONDS);
  }

  private WorkerPool() {}

  static PipeWorker borrow(String python, String module) {
    String key = python + "\u0000" + module;
    synchronized (IDLE) {
      Deque<PipeWorker> idle = IDLE.get(key);
      while (idle != null && !idle.isEmpty()) {
        PipeWorker worker = idle.pollFirst();
        if (worker.isAlive()) {
          return worker;
        }
        worker.destroy();  // its pipes, at once rather than at garbage collection
      }
    }
    STARTED.incrementAndGet();
    return PipeWorker.start(python, module);
  }

  /** How many workers this JVM has started (for tests and metrics: reuse shows as a count that stays put). */
  public static long started() {
    return STARTED.get();
  }

  /** How many live workers wait in this JVM's pool now (for tests and metrics). */
  public static int idle() {
    synchronized (IDLE) {
      return (int) IDLE.values().stream().flatMap(Deque::stream).filter(PipeWorker::isAlive).count();
    }
  }

  static void giveBack(PipeWorker worker) {
    synchronized (IDLE) {
      Deque<PipeWorker> idle = IDLE.computeIfAbsent(worker.key, k -> new ArrayDeque<>());
      if (worker.isAlive() && idle.size() < MAX_IDLE) {
        worker.idleSince = System.nanoTime();
        idle.addFirst(worker);
        return;
      }
    }
    worker.destroy();
  }

  /**
   * Destroys the workers that have waited in the pool for at least {@code nanos} (the reaper's timeout; tests ask
   * for 0). Returns how many. The most recently given back are lent first, so the ones that wait longest are the
   * ones a quieter executor no longer needs.
   */
  public static int reap(long nanos) {
    List<PipeWorker> expired = new ArrayList<>();
    long now = System.nanoTime();
    synchronized (IDLE) {
      for (Deque<PipeWorker> idle : IDLE.values()) {
        idle.removeIf(worker -> {
          boolean old = now - worker.idleSince >= nanos;
          if (old) {
            expired.add(worker);
          }
          return old;
        });
      }
    }
    for (PipeWorker worker : expired) {
      worker.destroy();  // its stdin closes: the worker ends
    }
    return expired.size();
  }

  private static void destroyIdle() {
    synchronized (IDLE) {
      for (Deque<PipeWorker> idle : IDLE.values()) {
        for (PipeWorker worker : idle) {
          worker.destroy();
        }
        idle.clear();
      }
    }
  }
}
