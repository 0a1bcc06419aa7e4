package io.kvroute.examples;

import java.util.List;
import java.util.Locale;

/**
 * Self-contained SVG charts (no plotting library, no scripts, no external fonts or styles): grouped bars and
 * cumulative-distribution lines; a stateless utility, thread-safe.
 */
final class SvgCharts {
  private static final String[] GREYS = {"#b0b0b0", "#707070", "#404040"};
  private static final String[] PALETTE = {
      "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  private static final int WIDTH = 760;
  private static final int HEIGHT = 360;
  private static final int LEFT = 60;
  private static final int RIGHT = 170;
  private static final int TOP = 40;
  private static final int BOTTOM = 50;

  private SvgCharts() {}

  /**
   * Grouped vertical bars: one group per {@code groups} entry, one bar per series in each group.
   *
   * @param values {@code values[series][group]}; NaN leaves the bar out
   * @param yMax the top of the value axis
   * @param percent whether values are fractions shown as percentages
   */
  static String groupedBars(String title, String yLabel, List<String> groups, List<String> series,
      double[][] values, double yMax, boolean percent) {
    StringBuilder svg = header(title);
    int plotW = WIDTH - LEFT - RIGHT;
    int plotH = HEIGHT - TOP - BOTTOM;
    yAxis(svg, yLabel, 0, yMax, false, percent);
    double groupW = (double) plotW / groups.size();
    double barW = groupW * 0.8 / series.size();
    for (int g = 0; g < groups.size(); g++) {
      double x0 = LEFT + g * groupW + groupW * 0.1;
      for (int s = 0; s < series.size(); s++) {
        double v = values[s][g];
        if (Double.isNaN(v)) {
          continue;
        }
        double h = Math.max(0, Math.min(1, v / yMax)) * plotH;
        svg.append(String.format(Locale.ROOT,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s, %s: %s</title></rect>%n",
            x0 + s * barW, TOP + plotH - h, barW * 0.92, h, color(series, s), escape(series.get(s)),
            escape(groups.get(g)),
            percent ? String.format(Locale.ROOT, "%.1f%%", 100 * v) : String.format(Locale.ROOT, "%.3f", v)));
      }
      svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
          LEFT + (g + 0.5) * groupW, HEIGHT - BOTTOM + 18, escape(groups.get(g))));
    }
    legend(svg, series, false);
    return svg.append("</svg>\n").toString();
  }

  /**
   * Cumulative distributions on a logarithmic value axis: series {@code s} reaches fraction {@code q} of requests
   * at {@code quantiles[s][i]} where {@code q = i / (quantiles[s].length - 1)}.
   */
  static String cdf(String title, String xLabel, List<String> series, double[][] quantiles) {
    StringBuilder svg = header(title);
    int plotW = WIDTH - LEFT - RIGHT;
    int plotH = HEIGHT - TOP - BOTTOM;
    double min = Double.POSITIVE_INFINITY;
    double max = 0;
    for (double[] q : quantiles) {
      for (double v : q) {
        if (v > 0) {
          min = Math.min(min, v);
          max = Math.max(max, v);
        }
      }
    }
    if (!(max > 0)) {
      min = 1;
      max = 10;
    }
    double lo = Math.floor(Math.log10(min));
    double hi = Math.max(lo + 1, Math.ceil(Math.log10(max)));
    yAxis(svg, "share of requests", 0, 1, false, true);
    for (double e = lo; e <= hi + 1e-9; e++) {
      for (int m = 1; m < 10; m++) {
        double v = m * Math.pow(10, e);
        double x = LEFT + (Math.log10(v) - lo) / (hi - lo) * plotW;
        if (x > LEFT + plotW + 0.5) {
          break;
        }
        svg.append(String.format(Locale.ROOT,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#%s\"/>%n", x, TOP, x, TOP + plotH,
            m == 1 ? "cccccc" : "eeeeee"));
        if (m == 1 || m == 2 || m == 5) {
          svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", x,
              TOP + plotH + 16, number(v)));
        }
      }
    }
    svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
        LEFT + plotW / 2, HEIGHT - 12, escape(xLabel)));
    for (int s = 0; s < series.size(); s++) {
      StringBuilder path = new StringBuilder();
      double[] q = quantiles[s];
      for (int i = 0; i < q.length; i++) {
        double v = Math.max(Math.pow(10, lo), q[i]);
        double x = LEFT + (Math.log10(v) - lo) / (hi - lo) * plotW;
        double y = TOP + plotH - (double) i / (q.length - 1) * plotH;
        path.append(i == 0 ? "M" : " L").append(String.format(Locale.ROOT, "%.1f %.1f", x, y));
      }
      svg.append(String.format(Locale.ROOT,
          "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"><title>%s</title></path>%n", path,
          color(series, s), escape(series.get(s))));
    }
    legend(svg, series, true);
    return svg.append("</svg>\n").toString();
  }

  private static StringBuilder header(String title) {
    StringBuilder svg = new StringBuilder();
    svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
        + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", WIDTH, HEIGHT, WIDTH, HEIGHT));
    svg.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", WIDTH, HEIGHT));
    svg.append(String.format(Locale.ROOT,
        "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>%n", LEFT, escape(title)));
    return svg;
  }

  private static void yAxis(StringBuilder svg, String label, double min, double max, boolean log, boolean percent) {
    int plotW = WIDTH - LEFT - RIGHT;
    int plotH = HEIGHT - TOP - BOTTOM;
    for (int i = 0; i <= 5; i++) {
      double v = min + (max - min) * i / 5;
      double y = TOP + plotH - (double) i / 5 * plotH;
      svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#%s\"/>%n",
          LEFT, y, LEFT + plotW, y, i == 0 ? "333333" : "e0e0e0"));
      svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6,
          y + 4, percent ? String.format(Locale.ROOT, "%.0f%%", 100 * v) : number(v)));
    }
    svg.append(String.format(Locale.ROOT,
        "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">%s</text>%n",
        TOP + plotH / 2, TOP + plotH / 2, escape(label)));
  }

  private static void legend(StringBuilder svg, List<String> series, boolean lines) {
    int x = WIDTH - RIGHT + 14;
    for (int s = 0; s < series.size(); s++) {
      int y = TOP + 8 + s * 20;
      if (lines) {
        svg.append(String.format(Locale.ROOT,
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>%n", x, y, x + 16, y,
            color(series, s)));
      } else {
        svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" fill=\"%s\"/>%n",
            x, y - 8, color(series, s)));
      }
      svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", x + 22, y + 4,
          escape(series.get(s))));
    }
  }

  /** Measured reference series (named "article ...") in greys, the others in colours, in order. */
  private static String color(List<String> series, int s) {
    int greys = 0;
    int colours = 0;
    for (int i = 0; i < s; i++) {
      if (series.get(i).startsWith("article")) {
        greys++;
      } else {
        colours++;
      }
    }
    return series.get(s).startsWith("article") ? GREYS[greys % GREYS.length] : PALETTE[colours % PALETTE.length];
  }

  private static String number(double v) {
    if (v >= 1000) {
      return String.format(Locale.ROOT, "%.0fk", v / 1000).replace(".0k", "k");
    }
    return v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.2g", v);
  }

  static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }
}
