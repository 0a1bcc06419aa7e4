package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Tracks the module's public API in {@code transport-okhttp/api/kvroute-transport-okhttp.txt}, as core does: any
 * change to a public signature fails here until the dump is regenerated with
 * {@code mvn -pl transport-okhttp test -Dtest=PublicApiTest -Dapi.update=true}. Also guards the module's imports.
 */
class PublicApiTest {
  private static final Path API_FILE = Path.of("api/kvroute-transport-okhttp.txt");
  private static final String PACKAGE = "io.kvroute.transport.okhttp";
  private static final Set<String> ALLOWED_IMPORT_PREFIXES = Set.of("java.", "io.kvroute.", "okhttp3.", "okio.",
      "org.jspecify.annotations.");

  @Test
  void publicApiMatchesTheCheckedInDump() throws IOException {
    String current = dump();
    if (Boolean.getBoolean("api.update")) {
      Files.createDirectories(API_FILE.getParent());
      Files.writeString(API_FILE, current, StandardCharsets.UTF_8);
    }
    String expected = Files.exists(API_FILE) ? Files.readString(API_FILE, StandardCharsets.UTF_8) : "";
    assertEquals(expected, current, "the public API changed; if intended, regenerate the dump with "
        + "'mvn -pl transport-okhttp test -Dtest=PublicApiTest -Dapi.update=true' and review the diff");
  }

  @Test
  void importsOnlyCoreOkHttpAndOkio() throws IOException {
    List<String> offenders = new ArrayList<>();
    try (Stream<Path> sources = Files.walk(Path.of("src/main/java"))) {
      for (Path source : sources.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList())) {
        for (String line : Files.readAllLines(source)) {
          if (line.startsWith("import ")) {
            String name = line.substring(line.startsWith("import static ") ? 14 : 7).replace(";", "").trim();
            boolean allowed = ALLOWED_IMPORT_PREFIXES.stream().anyMatch(name::startsWith)
                && !name.startsWith("io.kvroute.sim.") && !name.startsWith("io.kvroute.events.")
                && !name.startsWith("okhttp3.internal.") && !name.startsWith("mockwebserver");
            if (!allowed) {
              offenders.add(source.getFileName() + ": " + name);
            }
          }
        }
      }
    }
    assertTrue(offenders.isEmpty(), "transport-okhttp depends only on kvroute-core and okhttp-jvm: " + offenders);
  }

  private static String dump() throws IOException {
    Set<String> lines = new TreeSet<>();
    List<Class<?>> types = new ArrayList<>();
    try (Stream<Path> classes = Files.walk(Path.of("target/classes/" + PACKAGE.replace('.', '/')))) {
      for (Path file : classes.filter(p -> p.toString().endsWith(".class")).collect(Collectors.toList())) {
        String name = PACKAGE + "." + file.getFileName().toString().replace(".class", "");
        if (name.endsWith("package-info")) {
          continue;
        }
        try {
          types.add(Class.forName(name, false, PublicApiTest.class.getClassLoader()));
        } catch (ClassNotFoundException e) {
          throw new IOException(e);
        }
      }
    }
    for (Class<?> type : types) {
      if (!isExported(type)) {
        continue;
      }
      String owner = type.getName();
      lines.add(owner + " " + Modifier.toString(type.getModifiers() & ~Modifier.INTERFACE)
          + (type.isInterface() ? " interface" : type.isRecord() ? " record" : type.isEnum() ? " enum" : " class"));
      for (Constructor<?> c : type.getDeclaredConstructors()) {
        if (Modifier.isPublic(c.getModifiers())) {
          lines.add(owner + " <init>(" + params(c.getParameterTypes()) + ")");
        }
      }
      for (Method m : type.getDeclaredMethods()) {
        if (Modifier.isPublic(m.getModifiers()) && !m.isSynthetic()) {
          lines.add(owner + " " + (Modifier.isStatic(m.getModifiers()) ? "static " : "")
              + m.getReturnType().getTypeName() + " " + m.getName() + "(" + params(m.getParameterTypes()) + ")");
        }
      }
      for (Field f : type.getDeclaredFields()) {
        if (Modifier.isPublic(f.getModifiers())) {
          lines.add(owner + " field " + f.getType().getTypeName() + " " + f.getName());
        }
      }
    }
    return String.join("\n", lines) + "\n";
  }

  private static boolean isExported(Class<?> type) {
    for (Class<?> t = type; t != null; t = t.getEnclosingClass()) {
      if (!Modifier.isPublic(t.getModifiers())) {
        return false;
      }
    }
    return true;
  }

  private static String params(Class<?>[] types) {
    return Arrays.stream(types).map(Class::getTypeName).collect(Collectors.joining(", "));
  }
}
