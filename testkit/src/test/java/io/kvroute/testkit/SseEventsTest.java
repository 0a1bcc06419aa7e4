package io.kvroute.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SseEventsTest {
  private static InputStream body(String text) {
    return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
  }

  private static List<String> all(SseEvents events) throws IOException {
    List<String> data = new ArrayList<>();
    for (String d = events.next(); d != null; d = events.next()) {
      data.add(d);
    }
    return data;
  }

  @Test
  void readsEachDataPayloadUntilDoneAndSkipsEverythingElse() throws IOException {
    String stream = ": keep-alive\n\nevent: message\ndata: {\"a\":1}\n\ndata: {\"b\":\"é\"}\nid: 7\n\n"
        + "data: [DONE]\n\ndata: {\"after\":true}\n\n";
    try (SseEvents events = new SseEvents(body(stream))) {
      assertEquals(List.of("{\"a\":1}", "{\"b\":\"é\"}"), all(events), "nothing after [DONE] is an event");
      assertTrue(events.done());
      assertNull(events.next(), "stays at the end");
    }
  }

  @Test
  void aStreamThatBreaksOffIsNotDone() throws IOException {
    try (SseEvents events = new SseEvents(body("data: {\"a\":1}\n\ndata: {\"b\""))) {
      assertEquals(List.of("{\"a\":1}", "{\"b\""), all(events));
      assertFalse(events.done(), "no [DONE]: a truncated answer must not look complete");
    }
  }

  @Test
  void dataWithoutTheSpaceIsNotAnEvent() throws IOException {
    // OpenAI-compatible servers write "data: "; this reader, like the tests that used it, reads only that form.
    try (SseEvents events = new SseEvents(body("data:{\"a\":1}\n\ndata: [DONE]\n\n"))) {
      assertEquals(List.of(), all(events));
      assertTrue(events.done());
    }
  }
}
