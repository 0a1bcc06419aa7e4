package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class SvgChartsTest {
  private static Document parse(String svg) throws Exception {
    return DocumentBuilderFactory.newInstance().newDocumentBuilder()
        .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void barsAreWellFormedWithOneBarPerValueScaledToTheAxis() throws Exception {
    String svg = SvgCharts.groupedBars("hit <rate> & more", "share", List.of("2 kinds", "7 kinds"),
        List.of("article KV", "kvAware", "predictedTtft"),
        new double[][] {{0.5, Double.NaN}, {1.0, 0.25}, {0.75, 0.0}}, 1, true);
    Document doc = parse(svg);
    assertEquals("svg", doc.getDocumentElement().getTagName());
    NodeList rects = doc.getElementsByTagName("rect");
    // background + 5 bars (one NaN left out) + 3 legend swatches
    assertEquals(1 + 5 + 3, rects.getLength());
    double full = -1;
    double half = -1;
    for (int i = 0; i < rects.getLength(); i++) {
      Element r = (Element) rects.item(i);
      String title = r.getTextContent();
      if (title.startsWith("kvAware, 2 kinds")) {
        full = Double.parseDouble(r.getAttribute("height"));
      }
      if (title.startsWith("article KV, 2 kinds")) {
        half = Double.parseDouble(r.getAttribute("height"));
      }
    }
    assertEquals(full / 2, half, 0.11, "bar heights are proportional to values");
    assertTrue(svg.contains("hit &lt;rate&gt; &amp; more"));
    assertFalse(svg.contains("<script"), "self-contained and static");
  }

  @Test
  void cdfHasOnePathPerSeriesEndingAtTheTop() throws Exception {
    double[] q = new double[101];
    for (int i = 0; i <= 100; i++) {
      q[i] = 10 + i;
    }
    Document doc = parse(SvgCharts.cdf("ttft", "ms", List.of("a", "b"), new double[][] {q, q}));
    NodeList paths = doc.getElementsByTagName("path");
    assertEquals(2, paths.getLength());
    String d = ((Element) paths.item(0)).getAttribute("d");
    assertTrue(d.startsWith("M"));
    assertEquals(101, d.split("[ML]").length - 1, "one point per quantile");
  }
}
