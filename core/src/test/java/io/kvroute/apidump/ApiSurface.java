package io.kvroute.apidump;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Test support shared by the modules' API tests (published in core's test-jar): a stable text dump of a package's
 * public signatures, and the imports of a source tree that a module is not allowed to use. Stateless, thread-safe.
 */
public final class ApiSurface {
  private ApiSurface() {}

  /** One sorted line per public type, constructor, method and field of {@code packageName}'s compiled classes. */
  public static String dump(String packageName, Path classesRoot, ClassLoader loader) throws IOException {
    Set<String> lines = new TreeSet<>();
    List<Class<?>> types = new ArrayList<>();
    Path dir = classesRoot.resolve(packageName.replace('.', '/'));
    try (Stream<Path> classes = Files.list(dir)) {
      for (Path file : classes.filter(p -> p.toString().endsWith(".class")).collect(Collectors.toList())) {
        String simple = file.getFileName().toString().replace(".class", "");
        if (simple.equals("package-info")) {
          continue;
        }
        try {
          types.add(Class.forName(packageName + "." + simple, false, loader));
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

  /** The imports under {@code sources} that {@code allowed} rejects, as "File.java: name". */
  public static List<String> disallowedImports(Path sources, Predicate<String> allowed) throws IOException {
    List<String> offenders = new ArrayList<>();
    try (Stream<Path> files = Files.walk(sources)) {
      for (Path source : files.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList())) {
        for (String line : Files.readAllLines(source)) {
          if (line.startsWith("import ")) {
            String name = line.substring(line.startsWith("import static ") ? 14 : 7).replace(";", "").trim();
            if (!allowed.test(name)) {
              offenders.add(source.getFileName() + ": " + name);
            }
          }
        }
      }
    }
    return offenders;
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
