/*
 * Apache Kafka's own consumer (org.apache.kafka.clients.consumer.KafkaConsumer, the classic
 * group protocol, or the consumer group protocol of KIP-848 with --group-protocol consumer) as a
 * peer process for kgroup's interop tests and benchmarks.
 *
 * One source file, run with Java 11+'s single-file source launcher (JEP 330), no build tool:
 *
 *     java -cp "<Apache Kafka libs>/*" tests/peers/JavaPeer.java --bootstrap HOST:PORT \
 *          --group G --topic T [--assignors range|roundrobin|sticky|cooperative-sticky[,...]] \
 *          [--instance-id ID] [--client-id ID] [--session-timeout-ms 6000] \
 *          [--heartbeat-interval-ms 1000] [--max-poll-interval-ms 30000] [--record] [--commit] \
 *          [--mode peer|bench|throughput] [--auto-commit-interval-ms MS] [--records N] \
 *          [--max-poll-records 500] [--group-protocol classic|consumer] [--remote-assignor NAME]
 *          [--property KEY=VALUE ...]
 *
 * The libs are those of kafka-clients (any version with group.protocol, 3.7+; kgroup's tests
 * use the Apache Kafka 4.4.0 jars). Configuration (Kafka's consumer configs,
 * https://kafka.apache.org/documentation/#consumerconfigs): group.protocol = --group-protocol
 * (default classic; under consumer, session.timeout.ms, heartbeat.interval.ms and
 * partition.assignment.strategy are left unset, as Java refuses them there, and --remote-assignor
 * is group.remote.assignor), partition.assignment.strategy = the listed assignors in order (Java's ConsumerCoordinator
 * runs the highest RebalanceProtocol supported by all of them: EAGER as long as one of them
 * is eager, COOPERATIVE for CooperativeStickyAssignor alone; KIP-429), group.instance.id for a
 * static member (KIP-345; close() then leaves no LeaveGroup), auto.offset.reset=earliest,
 * enable.auto.commit=false (mode bench: true, every --auto-commit-interval-ms); --property sets any
 * other consumer config (repeatable), e.g. enable.metrics.push=false.
 *
 * Output: one JSON object per line on stdout, flushed at once. Everything else the JVM or the
 * client prints (log4j's default configuration writes to the console) goes to stderr: stdout is
 * the event channel only.
 *
 * --mode peer (the line protocol of the Python peer workers in tests/integration/peer_worker.py),
 * every event with "t" = System.nanoTime() / 1e9, which on Linux is CLOCK_MONOTONIC, the clock
 * of Python's time.monotonic() in the parent:
 *   {"event":"ready"}                       subscribed, before the first poll()
 *   {"event":"assigned","partitions":[[topic,p],...],"generation":g,"member_id":m}
 *                                           stamped when ConsumerRebalanceListener
 *                                           .onPartitionsAssigned starts
 *   {"event":"revoked"|"lost","partitions":[...],"generation":g}
 *                                           stamped when onPartitionsRevoked/Lost returns
 *                                           (with --commit, after committing the revoked
 *                                           partitions' positions, as Java's docs advise)
 *   {"event":"records","records":[[p,offset],...]}   when poll() returned them (with --record)
 *   {"event":"leader","assignor":name,"members":n}   this member's assignor is planning the
 *                                           group (the coordinator made it the leader)
 *   {"event":"assignment","assignor":name,"generation":g}   the protocol the coordinator
 *                                           chose, from ConsumerPartitionAssignor.onAssignment
 *   {"event":"commit_failed","name":exception class}  (with --commit)
 *   {"event":"error","name":...,"fatal":bool,"message":...}; a fenced static member
 *                                           (FencedInstanceIdException) has name
 *                                           FENCED_INSTANCE_ID, fatal true, and exits
 *   {"event":"closing"} (no poll() after it), {"event":"closed"}
 * Input, one command a line on stdin: "pause" (stop calling poll(); the heartbeat thread keeps
 * the member in the group until max.poll.interval.ms), "close" (close() and exit 0). End of
 * stdin is "close".
 *
 * --mode bench (the protocol of benchmarks/_members.py), "t" = wall clock seconds:
 *   {"event":"start"} before the consumer is built, {"event":"assigned"|"revoked"|"lost",
 *   "partitions":[p,...]}, {"event":"record","partition":p,"offset":o,"produced":float} for the
 *   first record of a partition after it was assigned (the value is the producer's time.time()),
 *   {"event":"closing"}, {"event":"closed"}, {"event":"error","message":...}.
 *
 * --mode throughput (benchmarks/throughput.py): consume --records records, touching each one's
 *   key, value, headers, partition and offset and checking per-partition offset order, commit
 *   synchronously, close, and print one line "RESULT {json}" with client, records, order_errors,
 *   value_bytes, headers, seconds (first non-empty poll's start to the last record), wall_seconds
 *   (from before the consumer is built), rps and peak_rss_mb (VmHWM of /proc/self/status).
 *   --work-ms-per-100 MS: sleep MS after each 100 records (a slow consumer's processing).
 *
 * --mode share (KIP-932; tests/integration/test_share_interop.py, benchmarks/share.py): Apache
 *   Kafka's org.apache.kafka.clients.consumer.KafkaShareConsumer in a share group --group
 *   (share.acknowledgement.mode=explicit; Java's share consumer takes no group.protocol,
 *   auto.offset.reset or enable.auto.commit), "t" as in --mode peer (CLOCK_MONOTONIC): subscribe,
 *   then poll(100 ms); each record, after --work-ms MS of sleep (I/O-like work, default 0), is
 *   acknowledged ACCEPT, then commitSync() sends the acknowledgements and waits for the answer.
 *   {"event":"ready"}                       subscribed, before the first poll()
 *   {"event":"fetching","lock_timeout_ms":n} the first answered ShareFetch
 *                                           (acquisitionLockTimeoutMs() is known)
 *   {"event":"records","values":[v,...],"partitions":[p,...],"deliveries":[d,...]}
 *                                           stamped when poll() returned them (values as UTF-8)
 *   {"event":"committed","polled":t0,"count":n,"failed":[[topic,p,error class],...]}
 *                                           stamped when commitSync() returned; polled is the
 *                                           "t" of the poll() those n records came from
 *   {"event":"error","name":...,"fatal":false,"message":...}, {"event":"closing"}, {"event":"closed"}
 *   --max-poll-records N (default 500); --acquire-mode batch_optimized|record_limit
 *   (share.acquire.mode, default batch_optimized); --gate: after "ready", wait for the command "go" before
 *   the first poll() (the benchmark starts every member at once).
 *   Input: "close" (close() and exit 0), as in --mode peer.
 */

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class JavaPeer {
    /** The event channel: the real stdout. System.out is pointed at stderr for everyone else. */
    static PrintStream events;
    static String mode = "peer";
    static KafkaConsumer<byte[], byte[]> consumer;

    // ------------------------------------------------------------------ JSON lines

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    static double now() {
        if (mode.equals("peer") || mode.equals("share")) {
            return System.nanoTime() / 1e9; // CLOCK_MONOTONIC on Linux, as time.monotonic()
        }
        Instant i = Instant.now();
        return i.getEpochSecond() + i.getNano() / 1e9; // time.time()
    }

    /** Emit {"event": name, "t": t, fields...}; fields are already JSON ("key":value,...). */
    static synchronized void emitAt(double t, String name, String fields) {
        StringBuilder b = new StringBuilder(64).append("{\"event\":").append(quote(name))
            .append(",\"t\":").append(t);
        if (fields != null && !fields.isEmpty()) {
            b.append(',').append(fields);
        }
        events.println(b.append('}'));
        events.flush();
    }

    static void emit(String name, String fields) {
        emitAt(now(), name, fields);
    }

    static String partitions(Collection<TopicPartition> tps) {
        List<TopicPartition> sorted = new ArrayList<>(tps);
        sorted.sort((a, b) -> a.topic().equals(b.topic())
            ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : sorted) {
            if (b.length() > 1) {
                b.append(',');
            }
            if (mode.equals("peer")) {
                b.append('[').append(quote(tp.topic())).append(',').append(tp.partition()).append(']');
            } else {
                b.append(tp.partition());
            }
        }
        return b.append(']').toString();
    }

    static String errorName(Throwable e) {
        return e instanceof FencedInstanceIdException ? "FENCED_INSTANCE_ID" : e.getClass().getSimpleName();
    }

    static String message(Throwable e) {
        String text = e.getClass().getSimpleName() + ": " + e.getMessage();
        return text.length() > 300 ? text.substring(0, 300) : text;
    }

    // ------------------------------------------------------------------ assignors that report

    /** Called by the wrapped assignors below on the leader, before it plans the group. */
    static void leading(String assignor, ConsumerPartitionAssignor.GroupSubscription subscription) {
        if (mode.equals("peer")) {
            emit("leader", "\"assignor\":" + quote(assignor) + ",\"members\":"
                + subscription.groupSubscription().size());
        }
    }

    /** Called on every member with the chosen assignor's assignment (SyncGroup's answer). */
    static void assigned(String assignor, ConsumerGroupMetadata metadata) {
        if (mode.equals("peer")) {
            emit("assignment", "\"assignor\":" + quote(assignor) + ",\"generation\":"
                + (metadata == null ? -1 : metadata.generationId()));
        }
    }

    /**
     * One of Kafka's assignors, reporting what it does: {@link #leading} when it plans (on the
     * leader), {@link #assigned} when its member gets the plan. Everything else is the assignor's own.
     */
    abstract static class ReportingAssignor implements ConsumerPartitionAssignor {
        private final ConsumerPartitionAssignor assignor;

        ReportingAssignor() {
            Class<?> kind = getClass();  // Kafka makes each assignor with its no-argument constructor
            this.assignor = kind == ReportingRangeAssignor.class ? new RangeAssignor()
                : kind == ReportingRoundRobinAssignor.class ? new RoundRobinAssignor()
                : kind == ReportingStickyAssignor.class ? new StickyAssignor()
                : new CooperativeStickyAssignor();
        }

        @Override
        public ByteBuffer subscriptionUserData(Set<String> topics) {
            return assignor.subscriptionUserData(topics);
        }

        @Override
        public GroupAssignment assign(Cluster metadata, GroupSubscription subscription) {
            leading(name(), subscription);
            return assignor.assign(metadata, subscription);
        }

        @Override
        public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
            assignor.onAssignment(assignment, metadata);
            assigned(name(), metadata);
        }

        @Override
        public List<RebalanceProtocol> supportedProtocols() {
            return assignor.supportedProtocols();
        }

        @Override
        public short version() {
            return assignor.version();
        }

        @Override
        public String name() {
            return assignor.name();
        }
    }

    public static class ReportingRangeAssignor extends ReportingAssignor { }

    public static class ReportingRoundRobinAssignor extends ReportingAssignor { }

    public static class ReportingStickyAssignor extends ReportingAssignor { }

    public static class ReportingCooperativeStickyAssignor extends ReportingAssignor { }

    static Class<?> assignorClass(String name) {
        switch (name.trim()) {
            case "range": return ReportingRangeAssignor.class;
            case "roundrobin": return ReportingRoundRobinAssignor.class;
            case "sticky": return ReportingStickyAssignor.class;
            case "cooperative-sticky": return ReportingCooperativeStickyAssignor.class;
            default: throw new IllegalArgumentException("unknown assignor " + name
                + " (range, roundrobin, sticky, cooperative-sticky)");
        }
    }

    // ------------------------------------------------------------------ listener

    static class Listener implements ConsumerRebalanceListener {
        final boolean commit;
        /** bench mode: partitions assigned and not yet seen a record since */
        final Set<Integer> fresh = new HashSet<>();

        Listener(boolean commit) {
            this.commit = commit;
        }

        int generation() {
            try {
                return consumer.groupMetadata().generationId();
            } catch (RuntimeException e) {
                return -1;
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            double t = now();
            if (mode.equals("peer")) {
                String memberId;
                try {
                    memberId = consumer.groupMetadata().memberId();
                } catch (RuntimeException e) {
                    memberId = null;
                }
                emitAt(t, "assigned", "\"partitions\":" + partitions(partitions) + ",\"generation\":"
                    + generation() + ",\"member_id\":" + quote(memberId));
            } else {
                for (TopicPartition tp : partitions) {
                    fresh.add(tp.partition());
                }
                emitAt(t, "assigned", "\"partitions\":" + partitions(partitions));
            }
        }

        /** In bench mode: the partitions are no longer fresh, {@code kind} is reported, and true. */
        private boolean benchGivesUp(String kind, Collection<TopicPartition> partitions) {
            if (!mode.equals("bench")) {
                return false;
            }
            for (TopicPartition tp : partitions) {
                fresh.remove(tp.partition());
            }
            emit(kind, "\"partitions\":" + partitions(partitions));
            return true;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (benchGivesUp("revoked", partitions)) {
                return;
            }
            if (commit && !partitions.isEmpty()) {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition tp : partitions) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
                try {
                    consumer.commitSync(offsets);
                } catch (KafkaException e) {
                    emit("commit_failed", "\"name\":" + quote(errorName(e)));
                }
            }
            emit("revoked", "\"partitions\":" + partitions(partitions) + ",\"generation\":" + generation());
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            if (benchGivesUp("lost", partitions)) {
                return;
            }
            emit("lost", "\"partitions\":" + partitions(partitions) + ",\"generation\":" + generation());
        }
    }

    // ------------------------------------------------------------------ main

    static LinkedBlockingQueue<String> commands() {
        LinkedBlockingQueue<String> queue = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    queue.add(line.trim());
                }
            } catch (IOException e) {
                // end of input
            }
            queue.add("close");
        }, "stdin");
        reader.setDaemon(true);
        reader.start();
        return queue;
    }

    static final Properties extra = new Properties();

    static Map<String, String> parse(String[] args) {
        Set<String> flags = Set.of("--record", "--commit", "--gate");
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + a);
            }
            if (a.equals("--property") && i + 1 < args.length && args[i + 1].contains("=")) {
                String[] kv = args[++i].split("=", 2);
                extra.put(kv[0], kv[1]);
            } else if (flags.contains(a)) {
                opts.put(a.substring(2), "true");
            } else {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                opts.put(a.substring(2), args[++i]);
            }
        }
        for (String required : List.of("bootstrap", "group", "topic")) {
            if (!opts.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is required");
            }
        }
        return opts;
    }

    static Properties config(Map<String, String> opts) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, opts.get("group"));
        String protocol = opts.getOrDefault("group-protocol", "classic");
        boolean classic = protocol.equals("classic");
        if (!classic && !protocol.equals("consumer")) {
            throw new IllegalArgumentException("unknown --group-protocol " + protocol + " (classic, consumer)");
        }
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        String instanceId = opts.get("instance-id");
        if (instanceId != null && !instanceId.isEmpty()) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
        }
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, opts.getOrDefault("client-id",
            "java-" + (instanceId != null ? instanceId : "dynamic")));
        if (classic) {
            // group.protocol=consumer refuses these three (the broker decides them): KIP-848
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, opts.getOrDefault("session-timeout-ms", "45000"));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, opts.getOrDefault("heartbeat-interval-ms", "3000"));
        } else if (opts.containsKey("remote-assignor")) {
            p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, opts.get("remote-assignor"));
        }
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, opts.getOrDefault("max-poll-interval-ms", "300000"));
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, opts.getOrDefault("max-poll-records", "500"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        boolean autoCommit = opts.containsKey("auto-commit-interval-ms");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, Boolean.toString(autoCommit));
        if (autoCommit) {
            p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, opts.get("auto-commit-interval-ms"));
        }
        p.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
        List<Class<?>> assignors = new ArrayList<>();
        for (String name : opts.getOrDefault("assignors", "range").split(",")) {
            if (!name.isBlank()) {
                assignors.add(assignorClass(name));
            }
        }
        if (classic) {
            // Class objects, not names: the source launcher's classes live in its own class loader
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignors);
        }
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.putAll(extra);
        return p;
    }

    public static void main(String[] args) throws Exception {
        events = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
            StandardCharsets.UTF_8);
        System.setOut(System.err); // before any logging is configured: stdout carries events only
        Map<String, String> opts = parse(args);
        mode = opts.getOrDefault("mode", "peer");
        switch (mode) {
            case "peer": runPeer(opts); break;
            case "bench": runBench(opts); break;
            case "throughput": runThroughput(opts); break;
            case "share": runShare(opts); break;
            default: throw new IllegalArgumentException("unknown --mode " + mode);
        }
    }

    static void runPeer(Map<String, String> opts) throws InterruptedException {
        boolean record = opts.containsKey("record");
        boolean commit = opts.containsKey("commit");
        LinkedBlockingQueue<String> cmds = commands();
        consumer = new KafkaConsumer<>(config(opts));
        consumer.subscribe(List.of(opts.get("topic")), new Listener(commit));
        emit("ready", null);
        boolean paused = false;
        while (true) {
            String cmd = paused ? cmds.poll(50, TimeUnit.MILLISECONDS) : cmds.poll();
            if ("close".equals(cmd)) {
                emit("closing", null);
                consumer.close();
                emit("closed", null);
                return;
            }
            if ("pause".equals(cmd)) {
                paused = true;
            }
            if (paused) {
                continue;
            }
            try {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                double returned = now();
                if (!records.isEmpty() && record) {
                    StringBuilder b = new StringBuilder("\"records\":[");
                    boolean first = true;
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        if (!first) {
                            b.append(',');
                        }
                        first = false;
                        b.append('[').append(r.partition()).append(',').append(r.offset()).append(']');
                    }
                    emitAt(returned, "records", b.append(']').toString());
                }
                if (!records.isEmpty() && commit) {
                    try {
                        consumer.commitSync();
                    } catch (FencedInstanceIdException e) {
                        throw e;
                    } catch (KafkaException e) {
                        emit("commit_failed", "\"name\":" + quote(errorName(e)));
                    }
                }
            } catch (FencedInstanceIdException e) {
                emit("error", "\"name\":\"FENCED_INSTANCE_ID\",\"fatal\":true,\"message\":" + quote(message(e)));
                System.exit(0);
            } catch (KafkaException e) {
                emit("error", "\"name\":" + quote(errorName(e)) + ",\"fatal\":false,\"message\":"
                    + quote(message(e)));
            }
        }
    }

    static void runBench(Map<String, String> opts) throws InterruptedException {
        LinkedBlockingQueue<String> cmds = commands();
        emit("start", null);
        consumer = new KafkaConsumer<>(config(opts));
        Listener listener = new Listener(false);
        consumer.subscribe(List.of(opts.get("topic")), listener);
        while (true) {
            if ("close".equals(cmds.poll())) {
                emit("closing", null);
                consumer.close();
                emit("closed", null);
                return;
            }
            try {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    if (listener.fresh.remove(r.partition())) {
                        String produced = "null";
                        try {
                            produced = Double.toString(Double.parseDouble(
                                new String(r.value(), StandardCharsets.UTF_8)));
                        } catch (RuntimeException e) {
                            // not a timestamp: no latency for this one
                        }
                        emit("record", "\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                            + ",\"produced\":" + produced);
                    }
                }
            } catch (KafkaException e) {
                emit("error", "\"message\":" + quote(message(e)));
                Thread.sleep(100);
            }
        }
    }

    static double peakRssMb() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.split("\\s+")[1]) / 1024.0;
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return -1;
    }

    /** A slow consumer's processing (throughput --work-ms-per-100): a wait, as for I/O. */
    static void sleepNanos(long nanos) {
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void runThroughput(Map<String, String> opts) {
        long expected = Long.parseLong(opts.get("records"));
        long workNanosPer100 = (long) (Double.parseDouble(opts.getOrDefault("work-ms-per-100", "0")) * 1_000_000);
        long tStart = System.nanoTime();
        consumer = new KafkaConsumer<>(config(opts));
        long count = 0;
        long valueBytes = 0;
        long headers = 0;
        long orderErrors = 0;
        Map<Integer, Long> last = new HashMap<>();
        long tFirst = -1;
        long tLast;
        try {
            consumer.subscribe(List.of(opts.get("topic")));
            while (count < expected) {
                long t0 = System.nanoTime();
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(1000));
                if (records.isEmpty()) {
                    continue;
                }
                if (tFirst < 0) {
                    tFirst = t0;
                }
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    int p = r.partition();
                    long offset = r.offset();
                    Long previous = last.get(p);
                    if (previous != null && offset <= previous) {
                        orderErrors++;
                    }
                    last.put(p, offset);
                    byte[] key = r.key();
                    valueBytes += r.value().length + (key != null ? key.length : 0);
                    for (Header h : r.headers()) {
                        headers++;
                    }
                    count++;
                    if (workNanosPer100 > 0 && count % 100 == 0) {
                        sleepNanos(workNanosPer100);
                    }
                }
            }
            tLast = System.nanoTime();
            consumer.commitSync();
        } finally {
            consumer.close();
        }
        double seconds = (tLast - tFirst) / 1e9;
        double wall = (System.nanoTime() - tStart) / 1e9;
        double rps = seconds > 0 ? count / seconds : Double.POSITIVE_INFINITY;
        events.println("RESULT {\"client\":\"java\",\"records\":" + count + ",\"order_errors\":" + orderErrors
            + ",\"value_bytes\":" + valueBytes + ",\"headers\":" + headers + ",\"seconds\":" + seconds
            + ",\"wall_seconds\":" + wall + ",\"rps\":" + rps + ",\"peak_rss_mb\":" + peakRssMb() + "}");
        events.flush();
    }

    // ------------------------------------------------------------------ share mode (KIP-932)

    static Properties shareConfig(Map<String, String> opts) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, opts.get("group"));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, opts.getOrDefault("client-id", "java-share"));
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, opts.getOrDefault("max-poll-records", "500"));
        p.put("share.acquire.mode", opts.getOrDefault("acquire-mode", "batch_optimized"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.putAll(extra);
        return p;
    }

    static void runShare(Map<String, String> opts) throws InterruptedException {
        long workNanos = (long) (Double.parseDouble(opts.getOrDefault("work-ms", "0")) * 1_000_000);
        LinkedBlockingQueue<String> cmds = commands();
        KafkaShareConsumer<byte[], byte[]> share = new KafkaShareConsumer<>(shareConfig(opts));
        share.subscribe(List.of(opts.get("topic")));
        emit("ready", null);
        if (opts.containsKey("gate") && "close".equals(cmds.take())) { // wait for "go"
            emit("closing", null);
            share.close();
            emit("closed", null);
            return;
        }
        boolean fetching = false;
        while (true) {
            if ("close".equals(cmds.poll())) {
                emit("closing", null);
                share.close();
                emit("closed", null);
                return;
            }
            try {
                ConsumerRecords<byte[], byte[]> records = share.poll(Duration.ofMillis(100));
                double polled = now();
                if (!fetching) {
                    Optional<Integer> lock = share.acquisitionLockTimeoutMs();
                    if (lock.isPresent()) {
                        fetching = true;
                        emitAt(polled, "fetching", "\"lock_timeout_ms\":" + lock.get());
                    }
                }
                if (records.isEmpty()) {
                    continue;
                }
                StringBuilder values = new StringBuilder("\"values\":[");
                StringBuilder parts = new StringBuilder("\"partitions\":[");
                StringBuilder deliveries = new StringBuilder("\"deliveries\":[");
                boolean first = true;
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (!first) {
                        values.append(',');
                        parts.append(',');
                        deliveries.append(',');
                    }
                    first = false;
                    values.append(quote(r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8)));
                    parts.append(r.partition());
                    deliveries.append(r.deliveryCount().map(String::valueOf).orElse("null"));
                }
                emitAt(polled, "records", values.append("],").append(parts).append("],")
                    .append(deliveries).append(']').toString());
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (workNanos > 0) {
                        sleepNanos(workNanos);
                    }
                    share.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                Map<TopicIdPartition, Optional<KafkaException>> answer = share.commitSync();
                StringBuilder failed = new StringBuilder("[");
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : answer.entrySet()) {
                    if (e.getValue().isPresent()) {
                        if (failed.length() > 1) {
                            failed.append(',');
                        }
                        failed.append('[').append(quote(e.getKey().topic())).append(',')
                            .append(e.getKey().partition()).append(',')
                            .append(quote(e.getValue().get().getClass().getSimpleName())).append(']');
                    }
                }
                emit("committed", "\"polled\":" + polled + ",\"count\":" + records.count()
                    + ",\"failed\":" + failed.append(']'));
            } catch (KafkaException | IllegalStateException e) {
                emit("error", "\"name\":" + quote(errorName(e)) + ",\"fatal\":false,\"message\":"
                    + quote(message(e)));
            }
        }
    }
}
