package io.kvroute.apidump;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The one API-dump implementation for every published module (shipped in core's test-jar; the modules'
 * {@code PublicApiTest} classes extend {@link AbstractPublicApiTest}). Stateless and thread-safe.
 *
 * <p>The dump has one sorted line per exported type and per public or protected constructor, method and field, each
 * line starting with the binary name of its owner, with full generic signatures: type parameters with their bounds,
 * parameterized and wildcard types ({@code java.util.List<io.kvroute.WorkerId>}), generic superclasses and
 * interfaces, varargs, and declared exceptions. Exported packages are those a compiled {@code module-info} exports
 * to everyone; without one, every package except those with an {@code internal} segment. Public methods inherited
 * from a package-private superclass are listed under the exported subclass (they are callable on it). Synthetic
 * members (bridge methods, lambdas), anonymous and local classes are left out.
 */
public final class ApiSurface {
  private static final int TYPE_MODIFIERS = Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC | Modifier.FINAL
      | Modifier.ABSTRACT;
  private static final int MEMBER_MODIFIERS = Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC
      | Modifier.FINAL | Modifier.ABSTRACT;

  private ApiSurface() {}

  /**
   * Dumps the exported API of a module's compiled classes.
   *
   * @param classesRoot the module's class output directory, such as {@code target/classes}
   * @param loader a class loader that can load those classes and their dependencies (they are not initialized)
   * @return one line per exported type and member, sorted, each ending in a newline; empty if nothing is exported
   * @throws IOException if the directory cannot be read or a class file names a class the loader cannot find
   */
  public static String dump(Path classesRoot, ClassLoader loader) throws IOException {
    Predicate<String> exported = exportedPackages(classesRoot);
    List<Class<?>> types = new ArrayList<>();
    List<Path> classFiles;
    try (Stream<Path> files = Files.walk(classesRoot)) {
      classFiles = files.filter(p -> p.toString().endsWith(".class")).sorted().collect(Collectors.toList());
    }
    for (Path file : classFiles) {
      String relative = classesRoot.relativize(file).toString().replace(file.getFileSystem().getSeparator(), "/");
      String binaryName = relative.substring(0, relative.length() - ".class".length()).replace('/', '.');
      int dot = binaryName.lastIndexOf('.');
      String pkg = dot < 0 ? "" : binaryName.substring(0, dot);
      if (binaryName.endsWith("module-info") || binaryName.endsWith("package-info") || !exported.test(pkg)) {
        continue;
      }
      Class<?> type;
      try {
        type = Class.forName(binaryName, false, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        throw new IOException("cannot load " + binaryName + " from " + classesRoot, e);
      }
      types.add(type);
    }
    return dump(types);
  }

  /**
   * Dumps the exported API among the given types (the others, such as package-private ones, are skipped).
   *
   * @param types the candidate types, in any order; nested types are dumped only if listed themselves
   * @return one line per exported type and member, sorted, each ending in a newline; empty if none is exported
   */
  public static String dump(Collection<Class<?>> types) {
    Set<String> lines = new TreeSet<>();
    for (Class<?> type : types) {
      if (isExported(type)) {
        dumpType(type, lines);
      }
    }
    return lines.isEmpty() ? "" : String.join("\n", lines) + "\n";
  }

  /**
   * Lists the imports of a source tree that a module is not allowed to use.
   *
   * @param sources the root of the source tree, such as {@code src/main/java}
   * @param allowed accepts the fully qualified name of each allowed import (static imports by their member's name)
   * @return the rejected imports as {@code "File.java: name"}, in walk order; empty if all are allowed
   * @throws IOException if a source file cannot be read
   */
  public static List<String> disallowedImports(Path sources, Predicate<String> allowed) throws IOException {
    List<String> offenders = new ArrayList<>();
    try (Stream<Path> files = Files.walk(sources)) {
      for (Path source : files.filter(p -> p.toString().endsWith(".java")).sorted().collect(Collectors.toList())) {
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

  /**
   * The lines only in {@code expected} (prefixed {@code "- "}) and only in {@code actual} (prefixed {@code "+ "}),
   * for a readable failure message.
   *
   * @param expected the checked-in dump
   * @param actual the dump of the current classes
   * @return the differing lines, removed ones first, each on its own line; empty if the dumps have the same lines
   */
  public static String diff(String expected, String actual) {
    Set<String> before = new TreeSet<>(Arrays.asList(expected.split("\n")));
    Set<String> after = new TreeSet<>(Arrays.asList(actual.split("\n")));
    StringBuilder out = new StringBuilder();
    before.stream().filter(l -> !l.isEmpty() && !after.contains(l)).forEach(l -> out.append("- ").append(l).append('\n'));
    after.stream().filter(l -> !l.isEmpty() && !before.contains(l)).forEach(l -> out.append("+ ").append(l).append('\n'));
    return out.toString();
  }

  private static Predicate<String> exportedPackages(Path classesRoot) throws IOException {
    Path moduleInfo = classesRoot.resolve("module-info.class");
    if (Files.exists(moduleInfo)) {
      try (InputStream in = Files.newInputStream(moduleInfo)) {
        Set<String> exports = ModuleDescriptor.read(in).exports().stream()
            .filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source).collect(Collectors.toSet());
        return exports::contains;
      }
    }
    return pkg -> !("." + pkg + ".").contains(".internal.");
  }

  private static boolean isExported(Class<?> type) {
    if (type.isAnonymousClass() || type.isLocalClass() || type.isSynthetic()) {
      return false;
    }
    for (Class<?> t = type; t != null; t = t.getEnclosingClass()) {
      int m = t.getModifiers();
      boolean visible = t.getEnclosingClass() == null ? Modifier.isPublic(m)
          : Modifier.isPublic(m) || (Modifier.isProtected(m) && !Modifier.isFinal(t.getEnclosingClass().getModifiers()));
      if (!visible) {
        return false;
      }
    }
    return true;
  }

  private static void dumpType(Class<?> type, Set<String> lines) {
    String owner = type.getName();
    boolean extensible = !Modifier.isFinal(type.getModifiers()) && !type.isEnum() && !type.isRecord();
    lines.add(owner + " " + declaration(type));
    for (Constructor<?> c : type.getDeclaredConstructors()) {
      if (visible(c.getModifiers(), extensible) && !c.isSynthetic()) {
        lines.add(owner + " " + modifiers(c.getModifiers() & MEMBER_MODIFIERS, "") + typeParameters(c)
            + "<init>" + signature(c));
      }
    }
    for (Method m : type.getDeclaredMethods()) {
      if (visible(m.getModifiers(), extensible) && !m.isSynthetic() && !m.isBridge()) {
        int mods = m.getModifiers() & MEMBER_MODIFIERS;
        if (type.isInterface()) {
          mods &= ~Modifier.ABSTRACT; // implied; "default" marks the others
        }
        lines.add(owner + " " + modifiers(mods, m.isDefault() ? "default" : "") + typeParameters(m)
            + name(m.getGenericReturnType()) + " " + m.getName() + signature(m));
      }
    }
    for (Field f : type.getDeclaredFields()) {
      if (visible(f.getModifiers(), extensible) && !f.isSynthetic()) {
        lines.add(owner + " " + modifiers(f.getModifiers() & MEMBER_MODIFIERS, "")
            + name(f.getGenericType()) + " " + f.getName());
      }
    }
    // Public methods inherited from a package-private superclass are callable on this type, so they are its API.
    Set<String> declared = new TreeSet<>();
    for (Method m : type.getDeclaredMethods()) {
      if (!m.isBridge() && !m.isSynthetic()) { // javac adds a bridge for each inherited public method: not an override
        declared.add(m.getName() + Arrays.toString(m.getParameterTypes()));
      }
    }
    for (Class<?> s = type.getSuperclass(); s != null && !isExported(s); s = s.getSuperclass()) {
      for (Method m : s.getDeclaredMethods()) {
        if (visible(m.getModifiers(), extensible) && !m.isSynthetic() && !m.isBridge()
            && declared.add(m.getName() + Arrays.toString(m.getParameterTypes()))) {
          lines.add(owner + " " + modifiers(m.getModifiers() & MEMBER_MODIFIERS, "") + typeParameters(m)
              + name(m.getGenericReturnType()) + " " + m.getName() + signature(m));
        }
      }
    }
  }

  private static boolean visible(int modifiers, boolean extensible) {
    return Modifier.isPublic(modifiers) || (extensible && Modifier.isProtected(modifiers));
  }

  private static String declaration(Class<?> type) {
    int mods = type.getModifiers() & TYPE_MODIFIERS;
    String kind;
    if (type.isAnnotation()) {
      kind = "@interface";
      mods &= ~Modifier.ABSTRACT;
    } else if (type.isInterface()) {
      kind = "interface";
      mods &= ~Modifier.ABSTRACT;
    } else if (type.isEnum()) {
      kind = "enum";
      mods &= ~(Modifier.FINAL | Modifier.ABSTRACT);
    } else if (type.isRecord()) {
      kind = "record";
    } else {
      kind = "class";
    }
    if (type.getEnclosingClass() != null && (type.isInterface() || type.isEnum() || type.isRecord())) {
      mods &= ~Modifier.STATIC; // implied for member interfaces, enums and records
    }
    StringBuilder out = new StringBuilder(modifiers(mods, type.isSealed() ? "sealed" : "")).append(kind).append(' ')
        .append(simpleName(type)).append(typeParameters(type.getTypeParameters()));
    Type superclass = type.getGenericSuperclass();
    List<Type> interfaces = new ArrayList<>(Arrays.asList(type.getGenericInterfaces()));
    while (superclass != null && !isExported(erasure(superclass))) {
      // A package-private base is an implementation detail, but the interfaces it implements are this type's too.
      interfaces.addAll(Arrays.asList(erasure(superclass).getGenericInterfaces()));
      superclass = erasure(superclass).getGenericSuperclass();
    }
    if (superclass != null && superclass != Object.class && !type.isEnum() && !type.isRecord()) {
      out.append(" extends ").append(name(superclass));
    }
    if (!interfaces.isEmpty() && !type.isAnnotation()) {
      out.append(type.isInterface() ? " extends " : " implements ")
          .append(interfaces.stream().map(ApiSurface::name).distinct().collect(Collectors.joining(", ")));
    }
    if (type.isSealed()) {
      out.append(" permits ").append(Arrays.stream(type.getPermittedSubclasses()).map(Class::getName).sorted()
          .collect(Collectors.joining(", ")));
    }
    return out.toString();
  }

  private static String simpleName(Class<?> type) {
    return type.getEnclosingClass() == null ? type.getSimpleName()
        : simpleName(type.getEnclosingClass()) + "." + type.getSimpleName();
  }

  private static String modifiers(int mods, String extra) {
    String text = Modifier.toString(mods);
    if (!extra.isEmpty()) {
      text = text.isEmpty() ? extra : text + " " + extra;
    }
    return text.isEmpty() ? "" : text + " ";
  }

  private static String typeParameters(Executable e) {
    String params = typeParameters(e.getTypeParameters());
    return params.isEmpty() ? "" : params + " ";
  }

  private static String typeParameters(TypeVariable<?>[] variables) {
    if (variables.length == 0) {
      return "";
    }
    return Arrays.stream(variables).map(v -> {
      List<Type> bounds = Arrays.stream(v.getBounds()).filter(b -> b != Object.class).collect(Collectors.toList());
      return bounds.isEmpty() ? v.getName()
          : v.getName() + " extends " + bounds.stream().map(ApiSurface::name).collect(Collectors.joining(" & "));
    }).collect(Collectors.joining(", ", "<", ">"));
  }

  private static String signature(Executable e) {
    Type[] params = e.getGenericParameterTypes();
    if (params.length != e.getParameterCount()) {
      params = e.getParameterTypes(); // inner-class constructors whose generic signature omits the outer instance
    }
    List<String> names = new ArrayList<>();
    for (int i = 0; i < params.length; i++) {
      String n = name(params[i]);
      if (e.isVarArgs() && i == params.length - 1 && n.endsWith("[]")) {
        n = n.substring(0, n.length() - 2) + "...";
      }
      names.add(n);
    }
    String text = "(" + String.join(", ", names) + ")";
    Type[] thrown = e.getGenericExceptionTypes();
    if (thrown.length > 0) {
      text += " throws " + Arrays.stream(thrown).map(ApiSurface::name).sorted().collect(Collectors.joining(", "));
    }
    return text;
  }

  private static Class<?> erasure(Type type) {
    return type instanceof ParameterizedType ? (Class<?>) ((ParameterizedType) type).getRawType() : (Class<?>) type;
  }

  private static String name(Type type) {
    if (type instanceof Class<?>) {
      return ((Class<?>) type).getTypeName();
    }
    if (type instanceof ParameterizedType) {
      ParameterizedType p = (ParameterizedType) type;
      String raw = ((Class<?>) p.getRawType()).getTypeName();
      if (p.getOwnerType() instanceof ParameterizedType) {
        raw = name(p.getOwnerType()) + "$" + ((Class<?>) p.getRawType()).getSimpleName();
      }
      return raw + Arrays.stream(p.getActualTypeArguments()).map(ApiSurface::name)
          .collect(Collectors.joining(", ", "<", ">"));
    }
    if (type instanceof WildcardType) {
      WildcardType w = (WildcardType) type;
      if (w.getLowerBounds().length > 0) {
        return "? super " + name(w.getLowerBounds()[0]);
      }
      Type[] upper = w.getUpperBounds();
      return upper.length == 0 || upper[0] == Object.class ? "?" : "? extends " + name(upper[0]);
    }
    if (type instanceof GenericArrayType) {
      return name(((GenericArrayType) type).getGenericComponentType()) + "[]";
    }
    if (type instanceof TypeVariable<?>) {
      return ((TypeVariable<?>) type).getName();
    }
    return type.getTypeName();
  }
}
