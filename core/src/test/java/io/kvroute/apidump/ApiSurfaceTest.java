package io.kvroute.apidump;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.AbstractList;
import java.util.List;
import java.util.Map;
import java.util.RandomAccess;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** Checks the API dump against signatures written out by hand from the fixture declarations below. */
public class ApiSurfaceTest { // public: the fixtures must be exported types
  /** A generic fixture: bounded type variable, generic supertypes, generic and varargs members, hidden members. */
  public abstract static class Shelf<T extends Comparable<? super T>> extends AbstractList<T> implements RandomAccess {
    public static final Map<String, List<Integer>> INDEX = Map.of();
    protected int guarded;
    int hidden;

    protected Shelf(List<? extends T> items) {}

    @SuppressWarnings("unchecked")
    public abstract <R extends Number & Comparable<R>> R largest(Supplier<? super R> fallback, T... extra)
        throws IOException;

    protected final T[] snapshot(T[] into) {
      return into;
    }

    void packagePrivate() {}

    /** Protected nested types of an extensible class are API. */
    protected interface Visitor<V> {
      default void visit(List<V> values) {}
    }
  }

  /** Members of a package-private base are API where an exported class inherits them. */
  abstract static class Base implements Cloneable {
    public String describe() {
      return "";
    }
  }

  /** Final: its protected members are unreachable, so they are not API. */
  public static final class Leaf extends Base {
    protected void notApi() {}
  }

  /** Not exported. */
  static final class Hidden {
    public void notApi() {}
  }

  @Test
  void dumpsGenericSignaturesVisibilityAndInheritedMembers() {
    String shelf = "io.kvroute.apidump.ApiSurfaceTest$Shelf ";
    String visitor = "io.kvroute.apidump.ApiSurfaceTest$Shelf$Visitor ";
    String leaf = "io.kvroute.apidump.ApiSurfaceTest$Leaf ";
    List<String> expected = List.of(
        leaf + "public <init>()",
        leaf + "public java.lang.String describe()",
        leaf + "public static final class ApiSurfaceTest.Leaf implements java.lang.Cloneable",
        shelf + "protected <init>(java.util.List<? extends T>)",
        shelf + "protected final T[] snapshot(T[])",
        shelf + "protected int guarded",
        shelf + "public abstract <R extends java.lang.Number & java.lang.Comparable<R>> R largest("
            + "java.util.function.Supplier<? super R>, T...) throws java.io.IOException",
        shelf + "public abstract static class ApiSurfaceTest.Shelf<T extends java.lang.Comparable<? super T>> "
            + "extends java.util.AbstractList<T> implements java.util.RandomAccess",
        shelf + "public static final java.util.Map<java.lang.String, java.util.List<java.lang.Integer>> INDEX",
        visitor + "protected interface ApiSurfaceTest.Shelf.Visitor<V>",
        visitor + "public default void visit(java.util.List<V>)");
    String dump = ApiSurface.dump(List.of(Shelf.class, Shelf.Visitor.class, Base.class, Leaf.class, Hidden.class));
    assertEquals(String.join("\n", expected.stream().sorted().toList()) + "\n", dump);
  }

  @Test
  void diffListsRemovedThenAddedLines() {
    assertEquals("- b\n+ c\n", ApiSurface.diff("a\nb\n", "a\nc\n"));
    assertEquals("", ApiSurface.diff("a\n", "a\n"));
  }
}
