/** A minimal Spring Cloud Gateway application using kvroute, with the application.yml a user would copy. */
package io.kvroute.spring.gateway.example;
