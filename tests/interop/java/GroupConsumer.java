// A consumer of a KIP-848 group (group.protocol=consumer) for tests/interop: subscribes to
// one topic, prints every assignment change and record on stdout (one line each, with the
// wall clock, so a test can check that no partition was owned twice at any instant),
// commits after every poll, and leaves the group cleanly on SIGTERM.
//
// Run as a single-file program: java -cp 'libs/*' GroupConsumer.java BOOTSTRAP GROUP TOPIC
// [key=value ...] (extra consumer properties).

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupConsumer {
    static synchronized void say(String line) {
        System.out.println(System.currentTimeMillis() + " " + line);
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> tps) {
        TreeSet<Integer> sorted = new TreeSet<>();
        for (TopicPartition tp : tps) sorted.add(tp.partition());
        StringBuilder out = new StringBuilder();
        for (int p : sorted) out.append(out.length() == 0 ? "" : ",").append(p);
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("group.protocol", "consumer");
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        Thread main = Thread.currentThread();
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { closed.await(); } catch (InterruptedException e) { }
        }));
        try {
            consumer.subscribe(List.of(args[2]), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    if (!tps.isEmpty()) consumer.commitSync();
                    say("REVOKED " + partitions(tps));
                }
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    say("ASSIGNED " + partitions(tps));
                }
                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    say("LOST " + partitions(tps));
                }
            });
            while (true) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    say("RECORD " + r.partition() + " " + r.offset() + " " + r.value());
                }
                consumer.commitSync();
            }
        } catch (WakeupException e) {
            // SIGTERM: leave the group
        } finally {
            consumer.close();
            say("CLOSED");
            closed.countDown();
        }
    }
}
