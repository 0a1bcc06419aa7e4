package io.kvroute.events.zmq;

import java.util.Objects;
import org.zeromq.ZMQ;

/**
 * A CURVE key pair in Z85 text form (40 characters each), for encrypting and authenticating event endpoints; an
 * immutable value, thread-safe.
 *
 * <p>The engine side (the publisher) is the CURVE server and holds a key pair; a subscriber that knows the server's
 * public key both encrypts the stream and authenticates the engine (a wrong key fails the handshake, and no events
 * arrive).
 *
 * @param publicKey the public key, Z85
 * @param secretKey the secret key, Z85
 */
public record CurveKeyPair(String publicKey, String secretKey) {
  /**
   * @param publicKey the public key, Z85
   * @param secretKey the secret key, Z85
   * @throws NullPointerException if a key is null
   * @throws IllegalArgumentException if a key is not 40 characters of Z85
   */
  public CurveKeyPair {
    checkKey(publicKey, "publicKey");
    checkKey(secretKey, "secretKey");
  }

  /**
   * A fresh random key pair.
   *
   * @return a new key pair from ZeroMQ's CURVE key generator
   */
  public static CurveKeyPair generate() {
    ZMQ.Curve.KeyPair pair = ZMQ.Curve.generateKeyPair();
    return new CurveKeyPair(pair.publicKey, pair.secretKey);
  }

  static String checkKey(String key, String name) {
    Objects.requireNonNull(key, name);
    if (key.length() != 40) {
      throw new IllegalArgumentException(name + " must be 40 characters of Z85 but has " + key.length());
    }
    byte[] decoded;
    try {
      decoded = ZMQ.Curve.z85Decode(key);
    } catch (RuntimeException e) {
      decoded = null;
    }
    if (decoded == null || decoded.length != 32) {
      throw new IllegalArgumentException(name + " is not valid Z85");
    }
    return key;
  }

  @Override
  public String toString() {
    return "CurveKeyPair{publicKey=" + publicKey + ", secretKey=<hidden>}";
  }
}
